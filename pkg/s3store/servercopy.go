package s3store

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// DefaultCopyThreshold is the largest object one CopyObject may copy
// (5 GiB); larger objects are copied part by part with UploadPartCopy.
const DefaultCopyThreshold = 5 << 30

// CopySource lists a bucket's objects for a server-side copy. The bodies
// it opens carry no data: only a CopyRef, which a CopySink turns into
// CopyObject or UploadPartCopy, so no object byte passes the client.
type CopySource struct {
	*Source
}

// NewCopySource wraps an S3 source for a server-side copy.
func NewCopySource(s *Source) *CopySource { return &CopySource{Source: s} }

// Probe looks key up as a single object with one HeadObject, which
// fetches none of its bytes; name is its destination name. An error that
// wraps transfer.ErrNotFound says key is no object.
func (c *CopySource) Probe(ctx context.Context, key, name string) (transfer.Object, error) {
	in := &s3.HeadObjectInput{Bucket: aws.String(c.t.Bucket), Key: aws.String(key)}
	if c.t.Version != "" {
		in.VersionId = aws.String(c.t.Version)
	}
	c.t.Req.applyHead(in)
	out, err := c.client.HeadObject(ctx, in)
	if err != nil {
		return transfer.Object{}, fmt.Errorf("head s3://%s/%s: %w", c.t.Bucket, key, statusError(err))
	}
	return transfer.Object{Key: key, Name: name, Size: aws.ToInt64(out.ContentLength), ETag: aws.ToString(out.ETag),
		VersionID: c.t.Version, ModTime: aws.ToTime(out.LastModified)}, nil
}

// List implements transfer.Source. It lists as Source does, without the
// objects' checksum algorithms: no byte passes through the client, so
// the engine has nothing to verify (the store checks its own copy).
func (c *CopySource) List(ctx context.Context, emit func(transfer.Object) error) error {
	return c.Source.List(ctx, func(o transfer.Object) error {
		o.ChecksumAlgorithm = ""
		return emit(o)
	})
}

// Open implements transfer.Source: a body over bytes [off, off+n) that
// names them instead of carrying them.
func (c *CopySource) Open(_ context.Context, obj *transfer.Object, off, n int64) (*transfer.Body, error) {
	if obj.Size < 0 {
		return nil, transfer.Permanent(fmt.Errorf("copy s3://%s/%s: size unknown", c.t.Bucket, obj.Key))
	}
	if n < 0 {
		n = obj.Size - off
	}
	ref := &CopyRef{Bucket: c.t.Bucket, Key: obj.Key, VersionID: obj.VersionID, ETag: obj.ETag}
	return &transfer.Body{ReadCloser: ref, Off: off, Len: n, Size: obj.Size, ETag: obj.ETag}, nil
}

// CopyRef names the source of a server-side copy. Reading it is an error:
// it carries no data.
type CopyRef struct {
	Bucket, Key, VersionID, ETag string
}

// Read implements io.Reader by failing: a CopySink never reads a CopyRef.
func (*CopyRef) Read([]byte) (int, error) {
	return 0, transfer.Permanent(errors.New("server-side copy: the body carries no data (the destination is not an S3 copy)"))
}

// Close implements io.Closer.
func (*CopyRef) Close() error { return nil }

// header renders the x-amz-copy-source value: bucket/key, URL-encoded
// ("+" too, which some servers would read as a space).
func (r *CopyRef) header() string {
	segs := strings.Split(r.Key, "/")
	for i, s := range segs {
		segs[i] = strings.ReplaceAll(url.PathEscape(s), "+", "%2B")
	}
	v := url.PathEscape(r.Bucket) + "/" + strings.Join(segs, "/")
	if r.VersionID != "" {
		v += "?versionId=" + url.QueryEscape(r.VersionID)
	}
	return v
}

// CopySink writes objects by server-side copy into one bucket of the
// same store: CopyObject below Threshold, otherwise a multipart upload
// whose parts the engine sends as UploadPartCopy in parallel.
type CopySink struct {
	client    *s3.Client
	srcBucket string
	bucket    string
	opts      UploadOptions
}

// NewCopySink returns a sink that copies from srcBucket into bucket of
// the same store, server-side. Of opts,
// Prefix, PartSize, Threshold (0: DefaultCopyThreshold), the checksum
// algorithm, storage class, SSE, Overwrite and Req apply.
func NewCopySink(client *s3.Client, srcBucket, bucket string, opts UploadOptions) *CopySink {
	if opts.ChecksumAlgorithm == "" {
		opts.ChecksumAlgorithm = CRC64NVME
	}
	if opts.Threshold <= 0 {
		opts.Threshold = DefaultCopyThreshold
	}
	return &CopySink{client: client, srcBucket: srcBucket, bucket: bucket, opts: opts}
}

func (c *CopySink) url(key string) string { return "s3://" + c.bucket + "/" + key }

// Destination is the URL of the object that name is copied to.
func (c *CopySink) Destination(name string) string { return c.url(c.opts.Prefix + name) }

// Create implements transfer.Sink. Unless Overwrite, an object already
// copied (same size and ETag) is skipped.
func (c *CopySink) Create(ctx context.Context, obj transfer.Object) (transfer.File, error) {
	key := c.opts.Prefix + obj.Name
	if err := clobbers(ctx, c.client, c.bucket, key, c.opts); err != nil {
		return nil, err
	}
	if !c.opts.Overwrite && obj.ETag != "" {
		in := &s3.HeadObjectInput{Bucket: aws.String(c.bucket), Key: aws.String(key)}
		c.opts.Req.applyHead(in)
		out, err := c.client.HeadObject(ctx, in)
		switch {
		case err == nil:
			if aws.ToInt64(out.ContentLength) == obj.Size && aws.ToString(out.ETag) == obj.ETag {
				return nil, &transfer.SkipError{Reason: "unchanged (size and etag)"}
			}
		case !errors.Is(statusError(err), transfer.ErrNotFound):
			return nil, fmt.Errorf("head %s: %w", c.url(key), statusError(err))
		}
	}
	up := &UploadSink{client: c.client, bucket: c.bucket, opts: c.opts}
	f := &copyFile{sink: c, up: &uploadFile{sink: up, key: key, size: obj.Size}, obj: obj}
	if obj.Size < c.opts.Threshold {
		return f, nil
	}
	nparts := (obj.Size + c.opts.PartSize - 1) / c.opts.PartSize
	if c.opts.PartSize <= 0 || nparts > MaxParts {
		return nil, transfer.Permanent(fmt.Errorf("copy %s: %d bytes need %d parts of %d, over S3's %d: raise --partsize",
			c.url(key), obj.Size, nparts, c.opts.PartSize, MaxParts))
	}
	f.up.parts = make([]types.CompletedPart, nparts)
	if err := f.startCopyUpload(ctx); err != nil {
		return nil, err
	}
	return f, nil
}

// copyFile is one object being copied server-side.
type copyFile struct {
	sink   *CopySink
	up     *uploadFile // the multipart upload, when there is one
	obj    transfer.Object
	copied bool
}

// startCopyUpload starts the multipart upload of a large copy, with the
// source's content type and metadata, which UploadPartCopy does not carry.
func (f *copyFile) startCopyUpload(ctx context.Context) error {
	o := f.sink.opts
	in := &s3.CreateMultipartUploadInput{Bucket: aws.String(f.sink.bucket), Key: aws.String(f.up.key),
		ChecksumAlgorithm: checksumAlgorithm(o.ChecksumAlgorithm)}
	f.up.sink.opts.Req.applyCreate(in)
	o.Metadata.applyCreate(in)
	in.StorageClass, in.ServerSideEncryption, in.SSEKMSKeyId = o.storage()
	out, err := f.sink.client.CreateMultipartUpload(ctx, in)
	if err != nil {
		return fmt.Errorf("create upload %s: %w", f.sink.url(f.up.key), statusError(err))
	}
	f.up.uploadID = aws.ToString(out.UploadId)
	return nil
}

// keepAlive calls progress(0) every few seconds until stop is called: a
// copy moves no bytes through the client, and the engine must not take
// its silence for a stall.
func keepAlive(progress func(int64)) (stop func()) {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(5 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				progress(0)
			}
		}
	}()
	return func() { close(done) }
}

// WritePart implements transfer.PartWriter: a CopyObject for the whole
// object, or one UploadPartCopy per part.
func (f *copyFile) WritePart(ctx context.Context, off, n int64, body *transfer.Body, progress func(int64)) (int64, error) {
	ref, ok := body.ReadCloser.(*CopyRef)
	if !ok {
		return 0, transfer.Permanent(fmt.Errorf("copy %s: the source is not an S3 copy source", f.sink.url(f.up.key)))
	}
	defer keepAlive(progress)()
	if f.up.parts == nil {
		if err := f.copyObject(ctx, ref); err != nil {
			return 0, err
		}
		progress(n)
		return n, nil
	}
	ps := f.sink.opts.PartSize
	if off%ps != 0 || n > ps || n <= 0 {
		return 0, transfer.Permanent(fmt.Errorf("copy %s: part at %d+%d is not on a %d-byte boundary", f.sink.url(f.up.key), off, n, ps))
	}
	num := int32(off/ps + 1)
	in := &s3.UploadPartCopyInput{
		Bucket: aws.String(f.sink.bucket), Key: aws.String(f.up.key), UploadId: aws.String(f.up.uploadID),
		PartNumber: aws.Int32(num), CopySource: aws.String(ref.header()),
		CopySourceRange: aws.String("bytes=" + strconv.FormatInt(off, 10) + "-" + strconv.FormatInt(off+n-1, 10)),
	}
	if ref.ETag != "" {
		in.CopySourceIfMatch = aws.String(ref.ETag)
	}
	if r := f.sink.opts.Req; r.RequestPayer != "" {
		in.RequestPayer = types.RequestPayer(r.RequestPayer)
	}
	out, err := f.sink.client.UploadPartCopy(ctx, in, noRetry)
	if err != nil {
		return 0, fmt.Errorf("copy part %d of %s to %s: %w", num, ref.Key, f.sink.url(f.up.key), statusError(err))
	}
	p := types.CompletedPart{PartNumber: aws.Int32(num)}
	if r := out.CopyPartResult; r != nil {
		p.ETag, p.ChecksumCRC64NVME, p.ChecksumCRC32C = r.ETag, r.ChecksumCRC64NVME, r.ChecksumCRC32C
	}
	f.up.parts[num-1] = p
	progress(n)
	return n, nil
}

// copyObject copies the whole object with one CopyObject.
func (f *copyFile) copyObject(ctx context.Context, ref *CopyRef) error {
	o := f.sink.opts
	in := &s3.CopyObjectInput{Bucket: aws.String(f.sink.bucket), Key: aws.String(f.up.key), CopySource: aws.String(ref.header()),
		ChecksumAlgorithm: checksumAlgorithm(o.ChecksumAlgorithm)}
	if ref.ETag != "" {
		in.CopySourceIfMatch = aws.String(ref.ETag)
	}
	o.Metadata.applyCopy(in)
	in.StorageClass, in.ServerSideEncryption, in.SSEKMSKeyId = o.storage()
	if o.Req.RequestPayer != "" {
		in.RequestPayer = types.RequestPayer(o.Req.RequestPayer)
	}
	if o.Req.ExpectedBucketOwner != "" {
		in.ExpectedBucketOwner = aws.String(o.Req.ExpectedBucketOwner)
	}
	if _, err := f.sink.client.CopyObject(ctx, in, noRetry); err != nil {
		return fmt.Errorf("copy %s to %s: %w", ref.Key, f.sink.url(f.up.key), statusError(err))
	}
	f.copied = true
	return nil
}

// WriteAt implements transfer.File; a copy takes whole parts instead.
func (f *copyFile) WriteAt([]byte, int64) (int, error) {
	return 0, transfer.Permanent(errors.New("server-side copy takes whole parts"))
}

// Commit completes the multipart copy, or copies an empty object.
func (f *copyFile) Commit() error {
	if f.up.parts != nil {
		if err := f.up.Commit(); err != nil {
			return err
		}
		return f.checkSize()
	}
	if f.copied {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// An empty object has no part, so no body named its source.
	return f.copyObject(ctx, &CopyRef{Bucket: f.sink.srcBucket, Key: f.obj.Key, VersionID: f.obj.VersionID, ETag: f.obj.ETag})
}

// Abort aborts the multipart upload of a large copy.
func (f *copyFile) Abort() error { return f.up.Abort() }

// checkSize checks that the object a multipart copy completed has the
// source's size: its parts were ranges the server cut, and one it cut
// wrong would make another object. One that differs is deleted.
func (f *copyFile) checkSize() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	u := f.up.sink
	in := &s3.HeadObjectInput{Bucket: aws.String(u.bucket), Key: aws.String(f.up.key)}
	u.opts.Req.applyHead(in)
	out, err := u.client.HeadObject(ctx, in)
	if err != nil {
		return nil // not checked: the copy itself succeeded
	}
	if got := aws.ToInt64(out.ContentLength); got != f.obj.Size {
		return u.wrongLanded(ctx, f.up.key, fmt.Sprintf("the copy has %d bytes, the source %d", got, f.obj.Size))
	}
	return nil
}
