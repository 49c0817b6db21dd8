package s3store

import (
	"bytes"
	"context"
	"crypto/md5"
	"fmt"
	"io"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3pd/s3pd/pkg/transfer"
	"github.com/s3pd/s3pd/pkg/transfer/transfertest"
)

// The adapters of this package run the shared contract against the
// emulator over real HTTP on loopback.

const contractPart = 64 << 10

// bucketTarget is a destination bucket of a fresh emulator.
type bucketTarget struct {
	c    *s3.Client
	sink func(c *s3.Client) transfer.Sink
}

func (b *bucketTarget) Sink(testing.TB) transfer.Sink { return b.sink(b.c) }

func (b *bucketTarget) Read(t testing.TB, name string) ([]byte, bool) {
	out, err := b.c.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(testBucket), Key: aws.String(name)})
	if err != nil {
		return nil, false
	}
	defer out.Body.Close()
	data, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	return data, true
}

// PutsWholeAtOnce implements transfertest.WholePutter: an object below
// the sinks' threshold is one PutObject or CopyObject, visible at once.
func (b *bucketTarget) PutsWholeAtOnce() {}

// Names lists the bucket's keys and its pending multipart uploads.
func (b *bucketTarget) Names(t testing.TB) []string {
	ctx := context.Background()
	var names []string
	p := s3.NewListObjectsV2Paginator(b.c, &s3.ListObjectsV2Input{Bucket: aws.String(testBucket)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		for _, o := range page.Contents {
			names = append(names, aws.ToString(o.Key))
		}
	}
	ups, err := b.c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(testBucket)})
	if err != nil && !noUploads(err) {
		t.Fatalf("list uploads: %v", err)
	}
	if err == nil {
		for _, u := range ups.Uploads {
			names = append(names, "pending upload of "+aws.ToString(u.Key))
		}
	}
	slices.Sort(names)
	return names
}

// contents remembers each object's content by ETag, for an upload's
// SourceChecksum.
type contents struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (c *contents) object(_ testing.TB, name string, data []byte, modTime time.Time) transfer.Object {
	etag := fmt.Sprintf(`"%x"`, md5.Sum(data))
	c.mu.Lock()
	c.m[etag] = data
	c.mu.Unlock()
	return transfer.Object{Key: name, Name: name, Size: int64(len(data)), ETag: etag, ModTime: modTime}
}

func (c *contents) checksum(_ context.Context, obj transfer.Object, alg string) (string, error) {
	c.mu.Lock()
	data := c.m[obj.ETag]
	c.mu.Unlock()
	h := newHash(alg)
	h.Write(data)
	return encodeSum(h), nil
}

func TestUploadSinkContract(t *testing.T) {
	cs := &contents{m: map[string][]byte{}}
	(&transfertest.SinkSuite{
		PartSize: contractPart,
		NewTarget: func(t *testing.T) transfertest.Target {
			_, c := emulator(t)
			return &bucketTarget{c: c, sink: func(c *s3.Client) transfer.Sink {
				return NewUploadSink(c, testBucket, UploadOptions{PartSize: contractPart, Threshold: contractPart, SourceChecksum: cs.checksum})
			}}
		},
		Object: cs.object,
	}).Run(t)
}

// TestCopySinkContract copies server-side from bucket "src" of the same
// emulator: each object the suite writes is put there first.
func TestCopySinkContract(t *testing.T) {
	var mu sync.Mutex
	var c *s3.Client // the current target's
	(&transfertest.SinkSuite{
		PartSize: contractPart,
		NewTarget: func(t *testing.T) transfertest.Target {
			_, client := emulator(t)
			mu.Lock()
			c = client
			mu.Unlock()
			return &bucketTarget{c: client, sink: func(c *s3.Client) transfer.Sink {
				return NewCopySink(c, "src", testBucket, UploadOptions{PartSize: contractPart, Threshold: contractPart})
			}}
		},
		Object: func(t testing.TB, name string, data []byte, modTime time.Time) transfer.Object {
			mu.Lock()
			client := c
			mu.Unlock()
			out, err := client.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("src"), Key: aws.String(name), Body: bytes.NewReader(data)})
			if err != nil {
				t.Fatalf("put the source: %v", err)
			}
			return transfer.Object{Key: name, Name: name, Size: int64(len(data)), ETag: aws.ToString(out.ETag), ModTime: modTime}
		},
		PartBody: func(t testing.TB, obj transfer.Object, _ []byte, off, n int64) *transfer.Body {
			b, err := NewCopySource(NewSource(c, Target{Bucket: "src"})).Open(context.Background(), &obj, off, n)
			if err != nil {
				t.Errorf("open the copy source: %v", err)
			}
			return b
		},
	}).Run(t)
}

// putAll creates a bucket's objects on a fresh emulator.
func putAll(t *testing.T, objects map[string][]byte) *s3.Client {
	_, c := emulator(t)
	for name, data := range objects {
		if _, err := c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("src"), Key: aws.String(name), Body: bytes.NewReader(data)}); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func TestSourceContract(t *testing.T) {
	(&transfertest.SourceSuite{
		New: func(t *testing.T, objects map[string][]byte) transfer.Source {
			// Pages of two: the listing pages.
			return NewSource(putAll(t, objects), Target{Bucket: "src", PageSize: 2})
		},
	}).Run(t)
}

func TestCopySourceContract(t *testing.T) {
	(&transfertest.SourceSuite{
		New: func(t *testing.T, objects map[string][]byte) transfer.Source {
			return NewCopySource(NewSource(putAll(t, objects), Target{Bucket: "src"}))
		},
	}).Run(t)
}

// TestCopySourceOpensReferences: every body a CopySource opens is a
// reference (transfer.Dataless) that the copy sink acts on, whatever the
// range: the engine must neither read nor sum it.
func TestCopySourceOpensReferences(t *testing.T) {
	src := NewCopySource(NewSource(putAll(t, map[string][]byte{"k": transfertest.Data("k", 5000)}), Target{Bucket: "src"}))
	o := transfer.Object{Key: "k", Name: "k", Size: 5000}
	for _, r := range [][2]int64{{0, -1}, {0, 1}, {4000, 1000}} {
		b, err := src.Open(t.Context(), &o, r[0], r[1])
		if err != nil {
			t.Fatalf("Open %d+%d: %v", r[0], r[1], err)
		}
		if _, ok := b.ReadCloser.(transfer.Dataless); !ok {
			t.Errorf("Open %d+%d: body %T is not Dataless", r[0], r[1], b.ReadCloser)
		}
		b.Close()
	}
}
