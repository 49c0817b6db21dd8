package checksum

import (
	"crypto/md5"
	"encoding/hex"
	"strconv"
	"strings"
)

// IsMD5ETag reports whether etag has the form of an MD5 of the object's
// bytes: 32 hexadecimal digits, surrounding double quotes (and a weak "W/"
// prefix) ignored, no "-N" multipart suffix.
//
// The form is necessary, not sufficient: S3 also gives single-part objects
// encrypted with SSE-KMS or SSE-C a 32-digit ETag that is not their MD5. A
// caller checks the response's x-amz-server-side-encryption (aws:kms,
// aws:kms:dsse) and x-amz-server-side-encryption-customer-algorithm headers
// before trusting it.
func IsMD5ETag(etag string) bool {
	_, ok := ParseMD5ETag(etag)
	return ok
}

// ParseMD5ETag returns the 16 bytes of an ETag that IsMD5ETag accepts, for
// comparison with crypto/md5's Sum, and false for any other ETag.
func ParseMD5ETag(etag string) ([16]byte, bool) {
	var sum [16]byte
	s := strings.TrimPrefix(strings.TrimSpace(etag), "W/")
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = s[1 : len(s)-1]
	}
	if len(s) != 32 {
		return sum, false
	}
	if _, err := hex.Decode(sum[:], []byte(s)); err != nil {
		return [16]byte{}, false
	}
	return sum, true
}

// ParseMultipartETag returns the 16 bytes and the part count of the
// ETag S3 gives an object uploaded in parts without SSE-KMS or SSE-C,
// "HEX-N": the MD5 of the N parts' MD5s (MultipartETag). It reports
// false for any other ETag.
func ParseMultipartETag(etag string) ([16]byte, int, bool) {
	s := strings.TrimPrefix(strings.TrimSpace(etag), "W/")
	s = strings.Trim(s, `"`)
	i := strings.LastIndexByte(s, '-')
	if i < 0 || !isDigits(s[i+1:]) || len(s)-i-1 > 5 {
		return [16]byte{}, 0, false
	}
	sum, ok := ParseMD5ETag(s[:i])
	n, err := strconv.Atoi(s[i+1:])
	if !ok || err != nil || n < 1 || n > 10000 {
		return [16]byte{}, 0, false
	}
	return sum, n, true
}

// MultipartETag is the ETag of an object whose parts have the MD5s
// sums, in order: the MD5 of their concatenation, with "-N".
func MultipartETag(sums [][16]byte) string {
	h := md5.New()
	for _, s := range sums {
		h.Write(s[:])
	}
	return hex.EncodeToString(h.Sum(nil)) + "-" + strconv.Itoa(len(sums))
}
