package httpstore

import (
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"strings"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// offeredOrder is the order in which a response's digests are preferred.
var offeredOrder = []string{"sha256", "sha512", "crc32c", "md5"}

// offered returns the digest of the whole file that a response's headers
// vouch for, the first of offeredOrder on offer (nil: none): Repr-Digest
// (RFC 9530, "sha-256=:BASE64:"), Digest (RFC 3230, "SHA-256=BASE64"),
// x-goog-hash ("crc32c=BASE64,md5=BASE64", Google Cloud Storage) and an
// X-Linked-Etag that is a SHA-256, as a model hub sends for a large
// file (linked: that header from a redirect the probe followed). Each
// describes the whole file, whatever range the response carries, unlike
// Content-Digest, which is ignored. The digest is marked Offered.
func offered(h http.Header, linked string) *transfer.Digest {
	sums := map[string][]byte{}
	add := func(alg string, sum []byte, err error) {
		d, ok := digests[strings.ToLower(alg)]
		if err == nil && ok && len(sum) == d.size && sums[d.name] == nil {
			sums[d.name] = sum
		}
	}
	for _, v := range h.Values("Repr-Digest") {
		for alg, value := range pairs(v) {
			sum, err := base64.StdEncoding.DecodeString(strings.Trim(value, ":"))
			add(alg, sum, err)
		}
	}
	for _, name := range []string{"Digest", "X-Goog-Hash"} {
		for _, v := range h.Values(name) {
			for alg, value := range pairs(v) {
				sum, err := base64.StdEncoding.DecodeString(value)
				add(alg, sum, err)
			}
		}
	}
	for _, v := range []string{h.Get("X-Linked-Etag"), linked} {
		if v = strings.Trim(strings.TrimPrefix(v, "W/"), `"`); len(v) == 64 {
			sum, err := hex.DecodeString(v)
			add("sha256", sum, err)
		}
	}
	for _, name := range offeredOrder {
		if sum := sums[name]; sum != nil {
			return &transfer.Digest{Name: name, New: digests[name].new, Sum: sum, Offered: true}
		}
	}
	return nil
}

// pairs splits "a=1, b=2" into its keys and values.
func pairs(v string) map[string]string {
	out := map[string]string{}
	for _, p := range strings.Split(v, ",") {
		k, value, ok := strings.Cut(strings.TrimSpace(p), "=")
		if ok {
			out[strings.TrimSpace(k)] = strings.TrimSpace(value)
		}
	}
	return out
}
