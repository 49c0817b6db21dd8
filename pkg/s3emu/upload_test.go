package s3emu

import (
	"bytes"
	"context"
	"encoding/base64"
	"hash/crc32"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/minio/crc64nvme"
)

func crc32cValue(p []byte) string {
	v := crc32.Checksum(p, crc32.MakeTable(crc32.Castagnoli))
	return base64.StdEncoding.EncodeToString([]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

func TestPutVerifiesAndStoresChecksums(t *testing.T) {
	for _, backend := range []string{BackendMemory, BackendDiscard} {
		t.Run(backend, func(t *testing.T) {
			_, ep := start(t, Options{Backend: backend})
			c := client(ep)
			ctx := context.Background()
			body := bytes.Repeat([]byte("s3pd"), 10000)
			_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bench"), Key: aws.String("c32c"),
				Body: bytes.NewReader(body), ChecksumAlgorithm: types.ChecksumAlgorithmCrc32c})
			if err != nil {
				t.Fatalf("PutObject with CRC32C: %v", err)
			}
			head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("bench"), Key: aws.String("c32c"), ChecksumMode: types.ChecksumModeEnabled})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := aws.ToString(head.ChecksumCRC32C), crc32cValue(body); got != want || aws.ToInt64(head.ContentLength) != int64(len(body)) {
				t.Errorf("HEAD: CRC32C %q size %d, want %q %d", got, aws.ToInt64(head.ContentLength), want, len(body))
			}

			// A raw PUT without a checksum gets S3's default CRC64NVME.
			resp, _ := raw(t, http.MethodPut, ep+"/bench/plain", bytes.NewReader(body), nil)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("plain PUT: status %d", resp.StatusCode)
			}
			resp, _ = raw(t, http.MethodHead, ep+"/bench/plain", nil, map[string]string{"x-amz-checksum-mode": "ENABLED"})
			if got, want := resp.Header.Get("x-amz-checksum-crc64nvme"), crc64Value(crc64nvme.Checksum(body)); got != want {
				t.Errorf("plain PUT: HEAD CRC64NVME %q, want %q", got, want)
			}

			// A wrong checksum is refused and nothing is stored.
			resp, msg := raw(t, http.MethodPut, ep+"/bench/bad", bytes.NewReader(body), map[string]string{"x-amz-checksum-crc32": "AAAAAA=="})
			if resp.StatusCode != http.StatusBadRequest || !bytes.Contains(msg, []byte("<Code>BadDigest</Code>")) {
				t.Errorf("PUT with a wrong CRC32: status %d body %q, want 400 BadDigest", resp.StatusCode, msg)
			}
			if resp, _ := raw(t, http.MethodHead, ep+"/bench/bad", nil, nil); resp.StatusCode != http.StatusNotFound {
				t.Errorf("after a BadDigest PUT, HEAD answers %d, want 404", resp.StatusCode)
			}

			out, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("bench")})
			if err != nil {
				t.Fatal(err)
			}
			algs := map[string]string{}
			for _, o := range out.Contents {
				if len(o.ChecksumAlgorithm) == 1 {
					algs[aws.ToString(o.Key)] = string(o.ChecksumAlgorithm[0])
				}
			}
			if algs["c32c"] != "CRC32C" || algs["plain"] != "CRC64NVME" || len(out.Contents) != 2 {
				t.Errorf("listing: %d objects, algorithms %v; want c32c CRC32C, plain CRC64NVME", len(out.Contents), algs)
			}
		})
	}
}

func TestMultipartAndUploadPartCopy(t *testing.T) {
	_, ep := start(t, Options{Dataset: "src:1:3000000", Buckets: []string{"dst"}})
	c := client(ep)
	ctx := context.Background()
	src := synthetic("src/00000000", 0, 3000000)
	up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("dst"), Key: aws.String("joined")})
	if err != nil {
		t.Fatal(err)
	}
	var parts []types.CompletedPart
	// Part 1 copies bytes 1000-1999999 of the synthetic object, part 2 is
	// uploaded, part 3 copies the rest.
	p1, err := c.UploadPartCopy(ctx, &s3.UploadPartCopyInput{Bucket: aws.String("dst"), Key: aws.String("joined"), UploadId: up.UploadId,
		PartNumber: aws.Int32(1), CopySource: aws.String("bench/src/00000000"), CopySourceRange: aws.String("bytes=1000-1999999")})
	if err != nil {
		t.Fatalf("UploadPartCopy: %v", err)
	}
	parts = append(parts, types.CompletedPart{PartNumber: aws.Int32(1), ETag: p1.CopyPartResult.ETag})
	middle := []byte("between the copies")
	p2, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("dst"), Key: aws.String("joined"), UploadId: up.UploadId,
		PartNumber: aws.Int32(2), Body: bytes.NewReader(middle)})
	if err != nil {
		t.Fatalf("UploadPart: %v", err)
	}
	parts = append(parts, types.CompletedPart{PartNumber: aws.Int32(2), ETag: p2.ETag})
	p3, err := c.UploadPartCopy(ctx, &s3.UploadPartCopyInput{Bucket: aws.String("dst"), Key: aws.String("joined"), UploadId: up.UploadId,
		PartNumber: aws.Int32(3), CopySource: aws.String("/bench/src/00000000"), CopySourceRange: aws.String("bytes=2000000-2999999")})
	if err != nil {
		t.Fatalf("UploadPartCopy: %v", err)
	}
	parts = append(parts, types.CompletedPart{PartNumber: aws.Int32(3), ETag: p3.CopyPartResult.ETag})
	_, err = c.UploadPartCopy(ctx, &s3.UploadPartCopyInput{Bucket: aws.String("dst"), Key: aws.String("joined"), UploadId: up.UploadId,
		PartNumber: aws.Int32(4), CopySource: aws.String("bench/src/00000000"), CopySourceRange: aws.String("bytes=2999999-3000000")})
	if got := errorCode(err); got != "InvalidRange" {
		t.Errorf("UploadPartCopy past the end: %v, want InvalidRange", err)
	}
	done, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("dst"), Key: aws.String("joined"),
		UploadId: up.UploadId, MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}})
	if err != nil {
		t.Fatalf("CompleteMultipartUpload: %v", err)
	}
	want := append(append(append([]byte{}, src[1000:2000000]...), middle...), src[2000000:]...)
	out, got := getAll(t, c, &s3.GetObjectInput{Bucket: aws.String("dst"), Key: aws.String("joined")})
	if !bytes.Equal(got, want) {
		t.Errorf("joined object: %d bytes, not the copied and uploaded parts (%d bytes)", len(got), len(want))
	}
	etag := aws.ToString(done.ETag)
	if !regexp.MustCompile(`^"[0-9a-f]{32}-3"$`).MatchString(etag) || aws.ToString(out.ETag) != etag {
		t.Errorf("ETag after complete %s, on GET %s; want the same 3-part ETag", etag, aws.ToString(out.ETag))
	}
	resp, _ := raw(t, http.MethodHead, ep+"/dst/joined", nil, map[string]string{"x-amz-checksum-mode": "ENABLED"})
	if got, want := resp.Header.Get("x-amz-checksum-crc64nvme"), crc64Value(crc64nvme.Checksum(want)); got != want {
		t.Errorf("joined object's CRC64NVME %q, want %q", got, want)
	}
}

func TestUploadPartVerifiesChecksum(t *testing.T) {
	_, ep := start(t, Options{Backend: BackendMemory})
	c := client(ep)
	up, err := c.CreateMultipartUpload(context.Background(), &s3.CreateMultipartUploadInput{Bucket: aws.String("bench"), Key: aws.String("k")})
	if err != nil {
		t.Fatal(err)
	}
	u := ep + "/bench/k?partNumber=1&uploadId=" + aws.ToString(up.UploadId)
	resp, body := raw(t, http.MethodPut, u, strings.NewReader("part"), map[string]string{"x-amz-checksum-crc32c": crc32cValue([]byte("PART"))})
	if resp.StatusCode != http.StatusBadRequest || !bytes.Contains(body, []byte("BadDigest")) {
		t.Errorf("UploadPart with a wrong CRC32C: status %d %q, want 400 BadDigest", resp.StatusCode, body)
	}
	resp, _ = raw(t, http.MethodPut, u, strings.NewReader("part"), map[string]string{"x-amz-checksum-crc32c": crc32cValue([]byte("part"))})
	if resp.StatusCode != http.StatusOK || resp.Header.Get("x-amz-checksum-crc32c") != crc32cValue([]byte("part")) {
		t.Errorf("UploadPart with the right CRC32C: status %d, checksum header %q", resp.StatusCode, resp.Header.Get("x-amz-checksum-crc32c"))
	}
}

func TestDiscardKeepsOnlyMetadata(t *testing.T) {
	_, ep := start(t, Options{Backend: BackendDiscard})
	c := client(ep)
	ctx := context.Background()
	body := bytes.Repeat([]byte{7}, 6<<20)
	up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("bench"), Key: aws.String("big")})
	if err != nil {
		t.Fatal(err)
	}
	var parts []types.CompletedPart
	for i, p := range [][]byte{body[:5<<20], body[5<<20:]} {
		out, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("bench"), Key: aws.String("big"), UploadId: up.UploadId,
			PartNumber: aws.Int32(int32(i + 1)), Body: bytes.NewReader(p)})
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, types.CompletedPart{PartNumber: aws.Int32(int32(i + 1)), ETag: out.ETag})
	}
	done, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("bench"), Key: aws.String("big"),
		UploadId: up.UploadId, MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}})
	if err != nil {
		t.Fatal(err)
	}
	head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("bench"), Key: aws.String("big")})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToInt64(head.ContentLength) != 6<<20 || aws.ToString(head.ETag) != aws.ToString(done.ETag) || !strings.HasSuffix(aws.ToString(head.ETag), `-2"`) {
		t.Errorf("HEAD: size %d ETag %s, want %d and the complete's ETag %s", aws.ToInt64(head.ContentLength), aws.ToString(head.ETag), 6<<20, aws.ToString(done.ETag))
	}
	resp, _ := raw(t, http.MethodGet, ep+"/bench/big", nil, nil)
	if resp.StatusCode != http.StatusNotImplemented {
		t.Errorf("GET from the discard backend: status %d, want 501", resp.StatusCode)
	}
}
