package s3emu

import (
	"bytes"
	"context"
	"crypto/rand"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/minio/crc64nvme"
)

// uploadParts creates a multipart upload of key and uploads parts, and
// returns its id and the parts to complete it with.
func uploadParts(t *testing.T, c *s3.Client, key string, parts ...[]byte) (*string, []types.CompletedPart) {
	t.Helper()
	ctx := context.Background()
	up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("bench"), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	var done []types.CompletedPart
	for i, p := range parts {
		out, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("bench"), Key: aws.String(key), UploadId: up.UploadId,
			PartNumber: aws.Int32(int32(i + 1)), Body: bytes.NewReader(p)})
		if err != nil {
			t.Fatal(err)
		}
		done = append(done, types.CompletedPart{ETag: out.ETag, PartNumber: aws.Int32(int32(i + 1))})
	}
	return up.UploadId, done
}

// TestCompleteChecksSizes: CompleteMultipartUpload refuses an
// x-amz-mp-object-size that is not the parts' total (InvalidRequest) and,
// with MinPartSize, a part but the last below it (EntityTooSmall); a
// right one answers the object's full-object CRC64NVME.
func TestCompleteChecksSizes(t *testing.T) {
	_, ep := start(t, Options{Backend: BackendMemory, MinPartSize: MinPartSize})
	c := client(ep)
	ctx := context.Background()
	big := make([]byte, MinPartSize)
	rand.Read(big)
	tail := []byte("the last part may be small")
	whole := append(append([]byte{}, big...), tail...)
	cases := []struct {
		name     string
		parts    [][]byte
		size     *int64
		wantCode string
	}{
		{"right size", [][]byte{big, tail}, aws.Int64(int64(len(whole))), ""},
		{"no size", [][]byte{big, tail}, nil, ""},
		{"wrong size", [][]byte{big, tail}, aws.Int64(int64(len(whole) - 1)), "InvalidRequest"},
		{"small first part", [][]byte{tail, big}, nil, "EntityTooSmall"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			key := strings.ReplaceAll(tc.name, " ", "-")
			id, parts := uploadParts(t, c, key, tc.parts...)
			out, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("bench"), Key: aws.String(key),
				UploadId: id, MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}, MpuObjectSize: tc.size})
			if tc.wantCode != "" {
				if got := errorCode(err); got != tc.wantCode {
					t.Fatalf("Complete: %v (code %q), want %s", err, got, tc.wantCode)
				}
				if resp, _ := raw(t, http.MethodHead, ep+"/bench/"+key, nil, nil); resp.StatusCode != http.StatusNotFound {
					t.Errorf("after a refused Complete, HEAD answers %d, want 404", resp.StatusCode)
				}
				return
			}
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			want := bytes.Join(tc.parts, nil)
			if got, w := aws.ToString(out.ChecksumCRC64NVME), crc64Value(crc64nvme.Checksum(want)); got != w || out.ChecksumType != types.ChecksumTypeFullObject {
				t.Errorf("Complete: CRC64NVME %q type %q, want %q FULL_OBJECT", got, out.ChecksumType, w)
			}
			if !strings.HasSuffix(strings.Trim(aws.ToString(out.ETag), `"`), "-2") {
				t.Errorf("Complete: ETag %s, want a multipart ETag of 2 parts", aws.ToString(out.ETag))
			}
			_, got := getAll(t, c, &s3.GetObjectInput{Bucket: aws.String("bench"), Key: aws.String(key)})
			if !bytes.Equal(got, want) {
				t.Errorf("GET: %d bytes, want the %d uploaded", len(got), len(want))
			}
		})
	}
}

// TestSmallPartsWithoutMinimum: with no MinPartSize (the default of
// in-process servers), parts of any size complete.
func TestSmallPartsWithoutMinimum(t *testing.T) {
	_, ep := start(t, Options{Backend: BackendMemory})
	c := client(ep)
	id, parts := uploadParts(t, c, "small", []byte("a"), []byte("b"))
	_, err := c.CompleteMultipartUpload(context.Background(), &s3.CompleteMultipartUploadInput{Bucket: aws.String("bench"), Key: aws.String("small"),
		UploadId: id, MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}, MpuObjectSize: aws.Int64(2)})
	if err != nil {
		t.Fatalf("Complete of two 1-byte parts: %v", err)
	}
}
