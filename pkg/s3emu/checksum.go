package s3emu

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/johannesboyne/gofakes3"
	"github.com/minio/crc64nvme"
)

// Checksum algorithms, as S3 names them.
const (
	AlgCRC64NVME = "CRC64NVME"
	AlgCRC32C    = "CRC32C"
	AlgCRC32     = "CRC32"
	AlgSHA1      = "SHA1"
	AlgSHA256    = "SHA256"
)

var checksumAlgorithms = []string{AlgCRC64NVME, AlgCRC32C, AlgCRC32, AlgSHA1, AlgSHA256}

// ChecksumHeader returns the header that carries a checksum of algorithm
// alg, e.g. "x-amz-checksum-crc64nvme".
func ChecksumHeader(alg string) string { return "x-amz-checksum-" + strings.ToLower(alg) }

// castagnoli is made on first use, not in every start of s3pd (which
// links the emulator for `bench`).
var castagnoli = sync.OnceValue(func() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) })

func newHash(alg string) hash.Hash {
	switch alg {
	case AlgCRC64NVME:
		return crc64nvme.New()
	case AlgCRC32C:
		return crc32.New(castagnoli())
	case AlgCRC32:
		return crc32.NewIEEE()
	case AlgSHA1:
		return sha1.New()
	case AlgSHA256:
		return sha256.New()
	}
	return nil
}

// crc64Value renders a CRC64NVME as S3 does: base64 of its 8 big-endian bytes.
func crc64Value(crc uint64) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], crc)
	return base64.StdEncoding.EncodeToString(b[:])
}

// requestedChecksum returns the algorithm and value of the x-amz-checksum-*
// header a request carries, if any.
func requestedChecksum(h http.Header) (alg, value string, err error) {
	for _, a := range checksumAlgorithms {
		if v := h.Get(ChecksumHeader(a)); v != "" {
			if alg != "" {
				return "", "", &apiError{http.StatusBadRequest, "InvalidRequest", "Expecting a single x-amz-checksum- header."}
			}
			alg, value = a, v
		}
	}
	return alg, value, nil
}

// verifyingReader passes an upload body through, computes its CRC64NVME and,
// when the request names one, the checksum it names; if that differs, the
// read that completes the body returns BadDigest instead of its bytes, so
// a backend never stores a body that failed verification.
type verifyingReader struct {
	r       io.Reader
	size    int64 // expected length, -1 if unknown
	n       int64
	crc     uint64
	alg     string
	want    string
	h       hash.Hash
	checked bool
	// trailer, when set, carries want in its trailing headers, read by
	// the time the body's last byte is.
	trailer *chunkedBody
	// noVerify computes alg's checksum without checking it (no want).
	noVerify bool
	// failed is the first error a read returned but io.EOF.
	failed error
}

func newVerifyingReader(r io.Reader, size int64, alg, want string) *verifyingReader {
	v := &verifyingReader{r: r, size: size, alg: alg, want: want}
	if alg != "" && alg != AlgCRC64NVME {
		v.h = newHash(alg)
	}
	return v
}

func (v *verifyingReader) Read(p []byte) (int, error) {
	n, err := v.read(p)
	if err != nil && err != io.EOF && v.failed == nil {
		v.failed = err
	}
	return n, err
}

func (v *verifyingReader) read(p []byte) (int, error) {
	n, err := v.r.Read(p)
	v.n += int64(n)
	v.crc = crc64nvme.Update(v.crc, p[:n])
	if v.h != nil {
		v.h.Write(p[:n])
	}
	if !v.checked && (err == io.EOF || v.size >= 0 && v.n >= v.size) {
		v.checked = true
		if v.trailer != nil && v.alg != "" {
			v.want = v.trailer.trailers.Get(ChecksumHeader(v.alg))
			if v.want == "" {
				return 0, &apiError{http.StatusBadRequest, "MalformedTrailerError", "x-amz-trailer names " + ChecksumHeader(v.alg) + " but the body's trailer does not carry it"}
			}
		}
		if v.alg != "" && !v.noVerify && v.value() != v.want {
			return 0, badDigest(v.alg)
		}
	}
	return n, err
}

// value returns the base64 checksum of what was read, in the requested
// algorithm (CRC64NVME when none was requested).
func (v *verifyingReader) value() string {
	if v.h == nil {
		return crc64Value(v.crc)
	}
	return base64.StdEncoding.EncodeToString(v.h.Sum(nil))
}

// algorithm returns the algorithm the object's checksum is stored in.
func (v *verifyingReader) algorithm() string {
	if v.alg == "" {
		return AlgCRC64NVME
	}
	return v.alg
}

func badDigest(alg string) error {
	return gofakes3.ErrorMessage(gofakes3.ErrBadDigest, fmt.Sprintf("The %s you specified did not match the calculated checksum.", strings.ToLower(alg)))
}
