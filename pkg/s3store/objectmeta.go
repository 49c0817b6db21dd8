package s3store

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// Metadata is what an upload or a copy sets on every object it writes,
// as the AWS CLI's --content-type, --cache-control, --content-disposition,
// --content-encoding and --metadata do. Empty fields are not sent; without
// ContentType an upload guesses it from the name's extension.
type Metadata struct {
	ContentType, CacheControl, ContentDisposition, ContentEncoding string
	// User is the x-amz-meta-* pairs.
	User map[string]string
}

// empty reports whether m sets nothing.
func (m Metadata) empty() bool {
	return m.ContentType == "" && m.CacheControl == "" && m.ContentDisposition == "" &&
		m.ContentEncoding == "" && len(m.User) == 0
}

// set writes m into a request's fields.
func (m Metadata) set(contentType, cacheControl, disposition, encoding **string, user *map[string]string) {
	for _, f := range []struct {
		dst **string
		v   string
	}{{contentType, m.ContentType}, {cacheControl, m.CacheControl}, {disposition, m.ContentDisposition}, {encoding, m.ContentEncoding}} {
		if f.v != "" {
			*f.dst = aws.String(f.v)
		}
	}
	if len(m.User) > 0 {
		*user = m.User
	}
}

func (m Metadata) applyPut(in *s3.PutObjectInput) {
	m.set(&in.ContentType, &in.CacheControl, &in.ContentDisposition, &in.ContentEncoding, &in.Metadata)
}

func (m Metadata) applyCreate(in *s3.CreateMultipartUploadInput) {
	m.set(&in.ContentType, &in.CacheControl, &in.ContentDisposition, &in.ContentEncoding, &in.Metadata)
}

// applyCopy replaces the source's metadata with m, when m sets any (the
// AWS CLI's behaviour); otherwise CopyObject keeps the source's.
func (m Metadata) applyCopy(in *s3.CopyObjectInput) {
	if m.empty() {
		return
	}
	in.MetadataDirective = types.MetadataDirectiveReplace
	m.set(&in.ContentType, &in.CacheControl, &in.ContentDisposition, &in.ContentEncoding, &in.Metadata)
}

// skipExists is the reason --no-clobber skips an object.
const skipExists = "exists (--no-clobber)"

// clobbers returns a SkipError when NoClobber is set and key exists.
func clobbers(ctx context.Context, client *s3.Client, bucket, key string, o UploadOptions) error {
	if !o.NoClobber {
		return nil
	}
	in := &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}
	o.Req.applyHead(in)
	_, err := client.HeadObject(ctx, in)
	switch {
	case err == nil:
		return &transfer.SkipError{Reason: skipExists}
	case errors.Is(statusError(err), transfer.ErrNotFound):
		return nil
	}
	return fmt.Errorf("head s3://%s/%s: %w", bucket, key, statusError(err))
}
