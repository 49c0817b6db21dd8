package checksum

import (
	"encoding/hex"
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
