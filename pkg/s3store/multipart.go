package s3store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// startMultipart resumes the upload an interrupted run left for the
// key, or creates a new one, and aborts every other incomplete upload of
// the key, telling Report of each. The upload resumed is the one the
// key's journal names, when its source is unchanged (its parts are kept
// where the journal and the upload's listing agree), else the newest of
// the upload's checksum algorithm whose listed parts fit the plan (kept
// where their listed checksums match the source's).
func (f *uploadFile) startMultipart(ctx context.Context, obj transfer.Object) error {
	u := f.sink
	ups, err := u.pendingUploads(ctx, f.key)
	if err != nil {
		return err
	}
	why := map[string]string{}
	if err := f.resumeJournaled(ctx, obj, ups, why); err != nil {
		return err
	}
	if f.uploadID == "" {
		if err := f.resumeListed(ctx, ups, why); err != nil {
			return err
		}
	}
	for _, up := range ups {
		id := aws.ToString(up.UploadId)
		if id == f.uploadID {
			continue
		}
		if err := u.abort(ctx, f.key, id); err != nil {
			return err
		}
		u.report(fmt.Sprintf("aborted the incomplete upload %s of %s, begun %s: %s", id, u.url(f.key),
			aws.ToTime(up.Initiated).UTC().Format(time.RFC3339), cmp.Or(why[id], "an earlier upload of this key that this run does not resume")))
	}
	if f.uploadID == "" {
		if f.uploadID, err = u.create(ctx, f.key, f.contentType); err != nil {
			return err
		}
	}
	if f.journal == nil {
		// A new upload, or one resumed by its listing: journaled from
		// now on (the parts kept are journaled as WritePart keeps them).
		f.journal = u.startJournal(f.header(obj))
	}
	return nil
}

// header is the journal's header for the upload of obj.
func (f *uploadFile) header(obj transfer.Object) journalHeader {
	o := f.sink.opts
	return journalHeader{Key: f.key, UploadID: f.uploadID, Source: f.sink.identity(obj), Size: f.size,
		PartSize: o.PartSize, Algorithm: o.ChecksumAlgorithm}
}

// resumeJournaled resumes the upload the key's journal names when it is
// still open and its source unchanged, and otherwise says in why why
// it is aborted.
func (f *uploadFile) resumeJournaled(ctx context.Context, obj transfer.Object, ups []types.MultipartUpload, why map[string]string) error {
	u := f.sink
	h, parts := u.readJournal(f.key)
	if h == nil {
		return nil
	}
	if !slices.ContainsFunc(ups, func(up types.MultipartUpload) bool { return aws.ToString(up.UploadId) == h.UploadID }) {
		u.removeJournal(f.key) // completed or aborted since
		return nil
	}
	want := f.header(obj)
	switch {
	case h.Stream:
		why[h.UploadID] = "an interrupted upload of a stream, which cannot be resumed"
		return nil
	case h.Source != want.Source || h.Size != want.Size:
		why[h.UploadID] = "its source changed since the interrupted run"
		return nil
	case h.PartSize != want.PartSize || h.Algorithm != want.Algorithm:
		why[h.UploadID] = fmt.Sprintf("it has parts of %d bytes with %s, this run %d with %s", h.PartSize, h.Algorithm, want.PartSize, want.Algorithm)
		return nil
	}
	prev, ok, err := u.previousParts(ctx, f.key, h.UploadID, int32(len(f.parts)), f.size)
	if err != nil {
		return err
	}
	if !ok {
		why[h.UploadID] = "its parts do not fit this run's"
		return nil
	}
	f.uploadID, f.previous, f.journal = h.UploadID, prev, u.reopenJournal(f.key)
	f.resumable = map[int32]journalPart{}
	for num, jp := range parts {
		if p, ok := prev[num]; ok && aws.ToString(p.ETag) == jp.ETag && aws.ToInt64(p.Size) == jp.Size {
			f.resumable[num] = jp
		}
	}
	return nil
}

// resumeListed resumes the newest upload of the key with the upload's
// checksum algorithm whose listed parts fit the plan, journaling it from
// now on.
func (f *uploadFile) resumeListed(ctx context.Context, ups []types.MultipartUpload, why map[string]string) error {
	u := f.sink
	var resume *types.MultipartUpload
	for i := range ups {
		up := &ups[i]
		if up.ChecksumAlgorithm != checksumAlgorithm(u.opts.ChecksumAlgorithm) || why[aws.ToString(up.UploadId)] != "" {
			continue
		}
		if resume == nil || aws.ToTime(up.Initiated).After(aws.ToTime(resume.Initiated)) {
			resume = up
		}
	}
	if resume == nil {
		return nil
	}
	id := aws.ToString(resume.UploadId)
	prev, ok, err := u.previousParts(ctx, f.key, id, int32(len(f.parts)), f.size)
	if err != nil {
		return err
	}
	if !ok {
		why[id] = "its parts do not fit this run's"
		return nil
	}
	f.uploadID, f.previous = id, prev
	return nil
}

// create starts a multipart upload of key with a full-object checksum.
func (u *UploadSink) create(ctx context.Context, key, contentType string) (string, error) {
	o := u.opts
	in := &s3.CreateMultipartUploadInput{
		Bucket: aws.String(u.bucket), Key: aws.String(key),
		ChecksumAlgorithm: checksumAlgorithm(o.ChecksumAlgorithm),
		ChecksumType:      types.ChecksumTypeFullObject,
	}
	if contentType != "" {
		in.ContentType = aws.String(contentType)
	}
	o.Metadata.applyCreate(in)
	in.StorageClass, in.ServerSideEncryption, in.SSEKMSKeyId = o.storage()
	o.Req.applyCreate(in)
	out, err := u.client.CreateMultipartUpload(ctx, in)
	if err != nil {
		return "", fmt.Errorf("create upload %s: %w", u.url(key), statusError(err))
	}
	return aws.ToString(out.UploadId), nil
}

// identity is what identifies obj's bytes at the source ("" when nothing
// does).
func (u *UploadSink) identity(obj transfer.Object) string {
	if u.opts.SourceIdentity == nil {
		return ""
	}
	return u.opts.SourceIdentity(obj)
}

// report tells Report of an incomplete upload aborted or left.
func (u *UploadSink) report(msg string) {
	if u.opts.Report != nil {
		u.opts.Report(msg)
	}
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
