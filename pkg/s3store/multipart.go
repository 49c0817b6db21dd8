package s3store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// startMultipart resumes the newest upload that a crashed run left for
// the key (its parts are kept where their size and checksum match the
// source), aborts any other, or creates a new one.
func (f *uploadFile) startMultipart(ctx context.Context) error {
	u := f.sink
	ups, err := u.pendingUploads(ctx, f.key)
	if err != nil {
		return err
	}
	var resume *types.MultipartUpload
	for i := range ups {
		up := &ups[i]
		if up.ChecksumAlgorithm != checksumAlgorithm(u.opts.ChecksumAlgorithm) {
			continue
		}
		if resume == nil || aws.ToTime(up.Initiated).After(aws.ToTime(resume.Initiated)) {
			resume = up
		}
	}
	if resume != nil {
		prev, ok, err := u.previousParts(ctx, f.key, aws.ToString(resume.UploadId), int32(len(f.parts)), f.size)
		if err != nil {
			return err
		}
		if ok {
			f.uploadID, f.previous = aws.ToString(resume.UploadId), prev
		}
	}
	for _, up := range ups {
		if id := aws.ToString(up.UploadId); id != f.uploadID {
			if err := u.abort(ctx, f.key, id); err != nil {
				return err
			}
		}
	}
	if f.uploadID != "" {
		return nil
	}
	o := u.opts
	in := &s3.CreateMultipartUploadInput{
		Bucket: aws.String(u.bucket), Key: aws.String(f.key),
		ChecksumAlgorithm: checksumAlgorithm(o.ChecksumAlgorithm),
		ChecksumType:      types.ChecksumTypeFullObject,
	}
	if f.contentType != "" {
		in.ContentType = aws.String(f.contentType)
	}
	o.Metadata.applyCreate(in)
	in.StorageClass, in.ServerSideEncryption, in.SSEKMSKeyId = o.storage()
	o.Req.applyCreate(in)
	out, err := u.client.CreateMultipartUpload(ctx, in)
	if err != nil {
		return fmt.Errorf("create upload %s: %w", u.url(f.key), statusError(err))
	}
	f.uploadID = aws.ToString(out.UploadId)
	return nil
}

// pendingUploads lists the incomplete multipart uploads of exactly key.
func (u *UploadSink) pendingUploads(ctx context.Context, key string) ([]types.MultipartUpload, error) {
	in := &s3.ListMultipartUploadsInput{Bucket: aws.String(u.bucket), Prefix: aws.String(key)}
	if u.opts.Req.ExpectedBucketOwner != "" {
		in.ExpectedBucketOwner = aws.String(u.opts.Req.ExpectedBucketOwner)
	}
	var ups []types.MultipartUpload
	for {
		out, err := u.client.ListMultipartUploads(ctx, in)
		if noUploads(err) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("list uploads of %s: %w", u.url(key), statusError(err))
		}
		for _, up := range out.Uploads {
			if aws.ToString(up.Key) == key {
				ups = append(ups, up)
			}
		}
		if !aws.ToBool(out.IsTruncated) {
			return ups, nil
		}
		in.KeyMarker, in.UploadIdMarker = out.NextKeyMarker, out.NextUploadIdMarker
	}
}

// previousParts lists an upload's parts. It reports false when they do
// not fit the plan (a part size other than PartSize, a part number past
// the last): that upload is then aborted rather than resumed.
func (u *UploadSink) previousParts(ctx context.Context, key, id string, nparts int32, size int64) (map[int32]types.Part, bool, error) {
	in := &s3.ListPartsInput{Bucket: aws.String(u.bucket), Key: aws.String(key), UploadId: aws.String(id)}
	u.opts.Req.applyListParts(in)
	prev := map[int32]types.Part{}
	for {
		out, err := u.client.ListParts(ctx, in)
		if err != nil {
			return nil, false, fmt.Errorf("list parts of upload %s of %s: %w", id, u.url(key), statusError(err))
		}
		for _, p := range out.Parts {
			num := aws.ToInt32(p.PartNumber)
			want := u.opts.PartSize
			if num == nparts {
				want = size - int64(nparts-1)*u.opts.PartSize
			}
			if num < 1 || num > nparts || aws.ToInt64(p.Size) != want {
				return nil, false, nil
			}
			prev[num] = p
		}
		if !aws.ToBool(out.IsTruncated) {
			return prev, true, nil
		}
		in.PartNumberMarker = out.NextPartNumberMarker
	}
}

// AbortUploads aborts every incomplete multipart upload under prefix
// that was initiated before the given time; it returns how many.
func (u *UploadSink) AbortUploads(ctx context.Context, prefix string, before time.Time) (int, error) {
	in := &s3.ListMultipartUploadsInput{Bucket: aws.String(u.bucket), Prefix: aws.String(prefix)}
	n := 0
	for {
		out, err := u.client.ListMultipartUploads(ctx, in)
		if noUploads(err) {
			return n, nil
		}
		if err != nil {
			return n, fmt.Errorf("list uploads under %s: %w", u.url(prefix), statusError(err))
		}
		for _, up := range out.Uploads {
			if aws.ToTime(up.Initiated).Before(before) {
				if err := u.abort(ctx, aws.ToString(up.Key), aws.ToString(up.UploadId)); err != nil {
					return n, err
				}
				n++
			}
		}
		if !aws.ToBool(out.IsTruncated) {
			return n, nil
		}
		in.KeyMarker, in.UploadIdMarker = out.NextKeyMarker, out.NextUploadIdMarker
	}
}

// noUploads reports the answer of stores (gofakes3) that list no
// uploads as NoSuchUpload; S3 answers an empty list.
func noUploads(err error) bool {
	var se *StatusError
	return err != nil && errors.As(statusError(err), &se) && se.Code == "NoSuchUpload"
}

func (r Request) applyHead(in *s3.HeadObjectInput) {
	if r.RequestPayer != "" {
		in.RequestPayer = types.RequestPayer(r.RequestPayer)
	}
	if r.ExpectedBucketOwner != "" {
		in.ExpectedBucketOwner = aws.String(r.ExpectedBucketOwner)
	}
}

func (r Request) applyPut(in *s3.PutObjectInput) {
	if r.RequestPayer != "" {
		in.RequestPayer = types.RequestPayer(r.RequestPayer)
	}
	if r.ExpectedBucketOwner != "" {
		in.ExpectedBucketOwner = aws.String(r.ExpectedBucketOwner)
	}
}

func (r Request) applyCreate(in *s3.CreateMultipartUploadInput) {
	if r.RequestPayer != "" {
		in.RequestPayer = types.RequestPayer(r.RequestPayer)
	}
	if r.ExpectedBucketOwner != "" {
		in.ExpectedBucketOwner = aws.String(r.ExpectedBucketOwner)
	}
}

func (r Request) applyUploadPart(in *s3.UploadPartInput) {
	if r.RequestPayer != "" {
		in.RequestPayer = types.RequestPayer(r.RequestPayer)
	}
	if r.ExpectedBucketOwner != "" {
		in.ExpectedBucketOwner = aws.String(r.ExpectedBucketOwner)
	}
}

func (r Request) applyComplete(in *s3.CompleteMultipartUploadInput) {
	if r.RequestPayer != "" {
		in.RequestPayer = types.RequestPayer(r.RequestPayer)
	}
	if r.ExpectedBucketOwner != "" {
		in.ExpectedBucketOwner = aws.String(r.ExpectedBucketOwner)
	}
}

func (r Request) applyListParts(in *s3.ListPartsInput) {
	if r.RequestPayer != "" {
		in.RequestPayer = types.RequestPayer(r.RequestPayer)
	}
	if r.ExpectedBucketOwner != "" {
		in.ExpectedBucketOwner = aws.String(r.ExpectedBucketOwner)
	}
}
