package s3store

import (
	"context"
	"encoding/base64"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/minio/crc64nvme"

	"github.com/s3pd/s3pd/pkg/checksum"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// Checksum algorithms an upload can send with every part. Both can be
// full-object checksums, which S3 combines from the parts.
const (
	CRC64NVME = "CRC64NVME"
	CRC32C    = "CRC32C"
)

// newHash returns a hash for alg (CRC64NVME unless alg is CRC32C).
func newHash(alg string) hash.Hash {
	if alg == CRC32C {
		return crc32.New(checksum.CastagnoliTable())
	}
	return crc64nvme.New()
}

// encodeSum renders a checksum as S3 does: base64 of its big-endian bytes.
func encodeSum(h hash.Hash) string {
	var b [8]byte
	return base64.StdEncoding.EncodeToString(h.Sum(b[:0]))
}

func checksumAlgorithm(alg string) types.ChecksumAlgorithm {
	if alg == CRC32C {
		return types.ChecksumAlgorithmCrc32c
	}
	return types.ChecksumAlgorithmCrc64nvme
}

// sumOf picks alg's value out of a response's checksum fields.
func sumOf(alg string, crc64, crc32c *string) string {
	if alg == CRC32C {
		return aws.ToString(crc32c)
	}
	return aws.ToString(crc64)
}

// sumFields returns pointers for the request fields that carry alg.
func sumFields(alg, v string) (crc64, crc32c *string) {
	if v == "" {
		return nil, nil
	}
	if alg == CRC32C {
		return nil, aws.String(v)
	}
	return aws.String(v), nil
}

var copyBufs = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}

// ChecksumOf computes obj's full-object checksum in alg by reading it
// whole from src: what a rerun compares with the checksum S3 keeps, to
// skip an object already uploaded.
func ChecksumOf(ctx context.Context, src transfer.Source, obj transfer.Object, alg string) (string, error) {
	h := newHash(alg)
	if obj.Size == 0 {
		return encodeSum(h), nil
	}
	b, err := src.Open(ctx, &obj, 0, obj.Size)
	if err != nil {
		return "", err
	}
	defer b.Close()
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	n, err := io.CopyBuffer(h, io.LimitReader(b, obj.Size), *bp)
	if err != nil {
		return "", fmt.Errorf("checksum %s: %w", obj.Key, err)
	}
	if n != obj.Size {
		return "", fmt.Errorf("checksum %s: %w", obj.Key, &transfer.ShortBodyError{Got: n, Want: obj.Size})
	}
	return encodeSum(h), nil
}

// Checksum returns obj's full-object checksum in alg as the store keeps
// it (HeadObject), without reading the object; "" when it has none in
// alg. An upload sink uses it to skip objects already copied.
func (s *Source) Checksum(ctx context.Context, obj transfer.Object, alg string) (string, error) {
	in := &s3.HeadObjectInput{Bucket: aws.String(s.t.Bucket), Key: aws.String(obj.Key), ChecksumMode: types.ChecksumModeEnabled}
	if obj.VersionID != "" {
		in.VersionId = aws.String(obj.VersionID)
	}
	s.t.Req.applyHead(in)
	// In the region a redirect may have moved the getter to.
	out, err := s.client.HeadObject(ctx, in, func(o *s3.Options) { o.Region = s.get.region() })
	if err != nil {
		return "", fmt.Errorf("head s3://%s/%s: %w", s.t.Bucket, obj.Key, statusError(err))
	}
	if v := sumOf(alg, out.ChecksumCRC64NVME, out.ChecksumCRC32C); !strings.Contains(v, "-") {
		return v, nil
	}
	return "", nil
}
