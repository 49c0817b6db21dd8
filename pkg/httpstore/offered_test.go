package httpstore

import (
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"strings"
	"testing"
)

func TestOffered(t *testing.T) {
	sha := strings.Repeat("ab", 32)
	b64 := func(h string) string { b, _ := hex.DecodeString(h); return base64.StdEncoding.EncodeToString(b) }
	md5 := strings.Repeat("01", 16)
	crc := "0a0b0c0d"
	for _, tt := range []struct {
		name    string
		headers map[string]string
		linked  string
		want    string // NAME:HEX, "" for none
	}{
		{"none", nil, "", ""},
		{"repr-digest", map[string]string{"Repr-Digest": "sha-256=:" + b64(sha) + ":"}, "", "sha256:" + sha},
		{"repr-digest unknown first", map[string]string{"Repr-Digest": "unixsum=:AAA=:, sha-256=:" + b64(sha) + ":"}, "", "sha256:" + sha},
		{"digest rfc3230", map[string]string{"Digest": "MD5=" + b64(md5) + ",SHA-256=" + b64(sha)}, "", "sha256:" + sha},
		{"goog hash prefers crc32c to md5", map[string]string{"X-Goog-Hash": "crc32c=" + b64(crc) + ",md5=" + b64(md5)}, "", "crc32c:" + crc},
		{"goog md5", map[string]string{"X-Goog-Hash": "md5=" + b64(md5)}, "", "md5:" + md5},
		{"linked etag", map[string]string{"X-Linked-Etag": `"` + sha + `"`}, "", "sha256:" + sha},
		{"linked from redirect", nil, `"` + sha + `"`, "sha256:" + sha},
		{"linked git sha1 ignored", map[string]string{"X-Linked-Etag": `"` + strings.Repeat("ab", 20) + `"`}, "", ""},
		{"wrong length ignored", map[string]string{"Repr-Digest": "sha-256=:" + b64(md5) + ":"}, "", ""},
		{"not base64 ignored", map[string]string{"Digest": "SHA-256=***"}, "", ""},
		{"content-digest ignored", map[string]string{"Content-Digest": "sha-256=:" + b64(sha) + ":"}, "", ""},
	} {
		h := http.Header{}
		for k, v := range tt.headers {
			h.Set(k, v)
		}
		got := ""
		if d := offered(h, tt.linked); d != nil {
			got = d.Name + ":" + hex.EncodeToString(d.Sum)
			if !d.Offered || d.New().Size() != len(d.Sum) {
				t.Errorf("%s: digest %+v not marked offered or of another size", tt.name, d)
			}
		}
		if got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
}
