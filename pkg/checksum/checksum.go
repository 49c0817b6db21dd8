// Package checksum verifies S3 full-object checksums of objects fetched in
// parallel byte ranges.
//
// A CRC of a whole object can be assembled from the CRCs of its ranges,
// whatever order the ranges finish in: each range keeps a Running CRC while
// its bytes stream past, Parts collects them, and Combine joins two adjacent
// CRCs in O(log n) time without touching the data again. Decode and Encode
// read and write values in the form S3 sends them (base64 of the big-endian
// CRC, headers x-amz-checksum-crc64nvme, -crc32c and -crc32).
//
// Only CRCs combine. SHA1 and SHA256 checksums, and MD5 ETags, need the bytes
// in order; ParseAlgorithm reports the SHA algorithms as unsupported.
package checksum

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"strings"
)

// Algorithm names a checksum algorithm as S3 spells it in
// x-amz-checksum-algorithm and ChecksumAlgorithm ("CRC64NVME", "CRC32C",
// "CRC32", "SHA1", "SHA256"). Only CRC64NVME, CRC32C and CRC32 are supported
// by this package, because only they can be combined from ranges.
type Algorithm string

// The combinable algorithms.
const (
	// CRC64NVME is CRC-64/NVME (reflected polynomial 0x9a6c9329ac4bc9b5),
	// the default for new S3 objects.
	CRC64NVME Algorithm = "CRC64NVME"
	// CRC32C is CRC-32/ISCSI, Castagnoli (reflected polynomial 0x82f63b78).
	CRC32C Algorithm = "CRC32C"
	// CRC32 is CRC-32/ISO-HDLC, IEEE (reflected polynomial 0xedb88320).
	CRC32 Algorithm = "CRC32"
)

// ParseAlgorithm reads an algorithm name, ignoring case and surrounding
// space. It returns the canonical upper-case Algorithm and true when the
// algorithm is supported (combinable). For any other name, SHA1 and SHA256
// included, it returns the upper-cased name and false, so a caller can report
// which algorithm it cannot verify.
func ParseAlgorithm(s string) (Algorithm, bool) {
	a := Algorithm(strings.ToUpper(strings.TrimSpace(s)))
	return a, a.Supported()
}

// Supported reports whether a is one of the combinable algorithms this
// package computes (CRC64NVME, CRC32C, CRC32). Start and Combine panic on
// any other.
func (a Algorithm) Supported() bool { return kindOf(a) != kindNone }

// Size returns the length in bytes of a value of algorithm a (8 for
// CRC64NVME, 4 for CRC32C and CRC32), or 0 if a is not supported.
func (a Algorithm) Size() int { return params[kindOf(a)].size }

// Header returns the HTTP header that carries a checksum of algorithm a,
// e.g. "x-amz-checksum-crc64nvme".
func (a Algorithm) Header() string { return "x-amz-checksum-" + strings.ToLower(string(a)) }

// Encode renders v as S3 sends it: standard base64 (with padding) of its
// big-endian bytes, 8 bytes for CRC64NVME and 4 for CRC32C and CRC32. It
// returns "" for an unsupported algorithm.
func Encode(alg Algorithm, v uint64) string {
	var b [8]byte
	switch alg.Size() {
	case 8:
		binary.BigEndian.PutUint64(b[:], v)
		return base64.StdEncoding.EncodeToString(b[:])
	case 4:
		binary.BigEndian.PutUint32(b[:4], uint32(v))
		return base64.StdEncoding.EncodeToString(b[:4])
	}
	return ""
}

// Decode reads a checksum value as S3 sends it for algorithm alg.
//
// A value that ends in "-N" (N a decimal part count) is a composite
// checksum: the checksum of the N part checksums of a multipart upload, not
// of the object's bytes. Decode then returns composite == true and v set to
// that checksum-of-checksums, which must not be compared with a CRC of the
// data. A caller records an object whose value is composite, or whose value
// Decode rejects with an error, as unverified, never as a mismatch.
func Decode(alg Algorithm, b64 string) (v uint64, composite bool, err error) {
	s := strings.TrimSpace(b64)
	if i := strings.LastIndexByte(s, '-'); i >= 0 {
		if !isDigits(s[i+1:]) {
			return 0, false, fmt.Errorf("the server's %s checksum %q has no part count after its '-'", alg, b64)
		}
		s, composite = s[:i], true
	}
	size := alg.Size()
	if size == 0 {
		return 0, composite, fmt.Errorf("the server's checksum %q is of %s, which s3pd does not compute", b64, alg)
	}
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return 0, composite, fmt.Errorf("the server's %s checksum %q is not base64: %w", alg, b64, err)
	}
	if len(raw) != size {
		return 0, composite, fmt.Errorf("the server's %s checksum %q is %d bytes, not %d", alg, b64, len(raw), size)
	}
	if size == 8 {
		return binary.BigEndian.Uint64(raw), composite, nil
	}
	return uint64(binary.BigEndian.Uint32(raw)), composite, nil
}

// isDigits reports whether s is a non-empty run of ASCII digits.
func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
