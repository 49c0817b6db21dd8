package s3store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/s3pd/s3pd/pkg/checksum"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// MaxParts is the most parts one multipart upload may have.
const MaxParts = 10000

// UploadOptions configure an UploadSink.
type UploadOptions struct {
	// Prefix is prepended to every object's name to make its key.
	Prefix string
	// PartSize is the engine's part size: part N covers bytes
	// [(N-1)*PartSize, N*PartSize).
	PartSize int64
	// Threshold is the engine's multipart threshold: smaller objects are
	// sent with one PutObject, larger ones as a multipart upload.
	Threshold int64
	// ChecksumAlgorithm is CRC64NVME (the default) or CRC32C. Every part
	// carries its checksum, which the server checks before storing it.
	ChecksumAlgorithm string
	// StorageClass, SSE ("AES256", "aws:kms", "aws:kms:dsse") and
	// SSEKMSKeyID are set on every object.
	StorageClass, SSE, SSEKMSKeyID string
	// Overwrite uploads even objects already present and identical.
	Overwrite bool
	// SizeOnly skips an object already present with the same size,
	// whatever its checksum (the AWS CLI's --size-only).
	SizeOnly bool
	// NoClobber never replaces an object that exists (skipped with
	// reason "exists (--no-clobber)").
	NoClobber bool
	// Metadata is set on every object written.
	Metadata Metadata
	// SourceChecksum, when set, computes an object's full-object checksum
	// at the source (see ChecksumOf): an object already present with the
	// same size and checksum is skipped. Nil: never skip.
	// The algorithm is the one the object at the destination has.
	SourceChecksum func(ctx context.Context, obj transfer.Object, alg string) (string, error)
	// Trailer sends the checksum of a body that cannot be read twice (a
	// stream from another store) as an HTTP trailer computed on the fly;
	// the SDK allows it over HTTPS only. Without it such a part is first
	// read into a pooled buffer of PartSize bytes, so memory grows by
	// PartSize per part in flight.
	Trailer bool
	// Req carries requester-pays and bucket-owner settings.
	Req Request
	// JournalDir, when set, is where upload journals live (see
	// journal.go): a multipart upload interrupted in any way is then
	// resumed by the next run, its acknowledged parts kept.
	JournalDir string
	// SourceIdentity identifies an object's bytes at the source (a
	// file's device, inode, size and modification time): an upload whose
	// source changed since the run that started it is aborted, not
	// resumed. Nil: objects resume by their parts' checksums alone.
	SourceIdentity func(transfer.Object) string
	// Report is told, in one line, of each incomplete upload of a key
	// that the upload aborts.
	Report func(msg string)
}

// ErrNotUTF8 reports a file name that is not valid UTF-8, which no S3 key
// can hold.
var ErrNotUTF8 = errors.New("name is not valid UTF-8, which S3 keys must be; rename the file")

// UploadSink writes objects to one bucket: a PutObject below the
// threshold, otherwise a multipart upload whose parts the engine sends in
// parallel. Abort aborts the multipart upload, so nothing is left behind
// to bill; an upload left by a crash is resumed (its parts that match are
// kept) or aborted by the next run.
type UploadSink struct {
	client *s3.Client
	bucket string
	opts   UploadOptions
	bufs   sync.Pool // *[]byte of PartSize, for bodies read twice
}

// NewUploadSink returns a sink that uploads into bucket through client.
func NewUploadSink(client *s3.Client, bucket string, opts UploadOptions) *UploadSink {
	if opts.ChecksumAlgorithm == "" {
		opts.ChecksumAlgorithm = CRC64NVME
	}
	u := &UploadSink{client: client, bucket: bucket, opts: opts}
	size := opts.PartSize
	u.bufs.New = func() any { b := make([]byte, size); return &b }
	return u
}

// uploadAPI sends a body without hashing it for the signature: the
// part's CRC protects it, and hashing would read it a second time.
func uploadAPI(o *s3.Options) {
	o.Retryer = aws.NopRetryer{}
	o.APIOptions = append(o.APIOptions, v4.SwapComputePayloadSHA256ForUnsignedPayloadMiddleware)
}

func (u *UploadSink) url(key string) string { return "s3://" + u.bucket + "/" + key }

// Destination is the URL of the object that name is uploaded to.
func (u *UploadSink) Destination(name string) string { return u.url(u.opts.Prefix + name) }

// Create implements transfer.Sink. Unless Overwrite, an object already
// present with the same size and checksum is skipped (*transfer.SkipError).
func (u *UploadSink) Create(ctx context.Context, obj transfer.Object) (transfer.File, error) {
	if !utf8.ValidString(obj.Name) {
		// S3 keys are UTF-8: such a key could not be fetched back.
		return nil, transfer.Permanent(fmt.Errorf("upload %q: %w", obj.Name, ErrNotUTF8))
	}
	key := u.opts.Prefix + obj.Name
	if err := clobbers(ctx, u.client, u.bucket, key, u.opts); err != nil {
		return nil, err
	}
	if !u.opts.Overwrite && (u.opts.SourceChecksum != nil || u.opts.SizeOnly) {
		if reason, err := u.unchanged(ctx, key, obj); err != nil {
			return nil, err
		} else if reason != "" {
			return nil, &transfer.SkipError{Reason: reason}
		}
	}
	f := &uploadFile{sink: u, key: key, size: obj.Size, contentType: mime.TypeByExtension(path.Ext(obj.Name))}
	if obj.Size < u.opts.Threshold {
		return f, nil
	}
	if u.opts.PartSize <= 0 {
		return nil, transfer.Permanent(fmt.Errorf("upload %s: no part size", u.url(key)))
	}
	nparts := (obj.Size + u.opts.PartSize - 1) / u.opts.PartSize
	if nparts > MaxParts {
		return nil, transfer.Permanent(fmt.Errorf("upload %s: %d bytes need %d parts of %d, over S3's %d: raise --partsize",
			u.url(key), obj.Size, nparts, u.opts.PartSize, MaxParts))
	}
	f.parts = make([]types.CompletedPart, nparts)
	f.sums = checksum.NewParts(algorithm(u.opts.ChecksumAlgorithm), obj.Size, u.opts.PartSize)
	f.echo = make([]bool, nparts)
	if err := f.startMultipart(ctx, obj); err != nil {
		return nil, err
	}
	return f, nil
}

// unchanged reports why key need not be uploaded, or "" if it must be.
func (u *UploadSink) unchanged(ctx context.Context, key string, obj transfer.Object) (string, error) {
	in := &s3.HeadObjectInput{Bucket: aws.String(u.bucket), Key: aws.String(key), ChecksumMode: types.ChecksumModeEnabled}
	u.opts.Req.applyHead(in)
	out, err := u.client.HeadObject(ctx, in)
	if err != nil {
		if err = statusError(err); errors.Is(err, transfer.ErrNotFound) {
			return "", nil
		}
		return "", fmt.Errorf("head %s: %w", u.url(key), err)
	}
	if aws.ToInt64(out.ContentLength) != obj.Size {
		return "", nil
	}
	if u.opts.SizeOnly {
		return "unchanged (size, --size-only)", nil
	}
	if u.opts.SourceChecksum == nil {
		return "", nil
	}
	// Compare in the algorithm asked for, else in the one the object has:
	// a composite checksum ("...-N") covers parts, not the object.
	alg, remote := u.opts.ChecksumAlgorithm, ""
	for _, a := range []string{alg, CRC64NVME, CRC32C} {
		if v := sumOf(a, out.ChecksumCRC64NVME, out.ChecksumCRC32C); v != "" && !strings.Contains(v, "-") {
			alg, remote = a, v
			break
		}
	}
	if remote == "" {
		return "", nil
	}
	local, err := u.opts.SourceChecksum(ctx, obj, alg)
	if err != nil {
		return "", err
	}
	if local != remote {
		return "", nil
	}
	return "unchanged (size and " + strings.ToLower(alg) + ")", nil
}

// uploadFile is one object being uploaded.
type uploadFile struct {
	sink        *UploadSink
	key         string
	size        int64
	contentType string

	uploadID string
	parts    []types.CompletedPart // by part number - 1; nil for PutObject
	previous map[int32]types.Part  // parts of a resumed upload
	put      bool                  // the PutObject was sent
	// completed: the CompleteMultipartUpload succeeded, so the upload is
	// incomplete no longer and nothing of it is left to resume.
	completed bool

	// sums are the CRCs of the parts as sent, combined at Commit into
	// the object's, which the destination's must equal (nil for a
	// PutObject, and for a server-side copy, which sends no bytes).
	sums *checksum.Parts
	// echo says, by part number - 1, which parts' answers carried their
	// checksum (each part's own slot: parts run in parallel).
	echo []bool
	// journal records the parts acknowledged, for a rerun; resumable are
	// the parts of a resumed upload that its journal and its listing
	// agree on.
	journal   *uploadJournal
	resumable map[int32]journalPart
	reused    atomic.Int64 // bytes of the parts kept from an interrupted run
	// landing is how the destination was checked (Landed).
	landing transfer.Verification
}

// Landed implements transfer.Lander.
func (f *uploadFile) Landed() transfer.Verification { return f.landing }

// WritePart implements transfer.PartWriter: one UploadPart per part, or
// the PutObject of a small object, each with its checksum.
func (f *uploadFile) WritePart(ctx context.Context, off, n int64, body *transfer.Body, progress func(int64)) (int64, error) {
	alg := f.sink.opts.ChecksumAlgorithm
	if f.parts == nil {
		if off != 0 || n != f.size {
			return 0, transfer.Permanent(fmt.Errorf("put %s: part %d+%d of a %d-byte object", f.sink.url(f.key), off, n, f.size))
		}
		run := checksum.Start(algorithm(alg))
		rd, sum, release, err := f.sink.prepare(body, n, progress, &run)
		if err != nil {
			return 0, err
		}
		defer release()
		if err := f.sameAsSource(body, sum); err != nil {
			return 0, err
		}
		got, err := f.putObject(ctx, rd, n, sum)
		if err != nil {
			return 0, err
		}
		if run.Len() != n {
			return 0, fmt.Errorf("put %s: the request read %d of %d bytes", f.sink.url(f.key), run.Len(), n)
		}
		s := sent{key: f.key, size: n, sum: checksum.Encode(algorithm(alg), run.Sum()), answered: sum != "", headed: sum == ""}
		if f.landing, err = f.sink.landed(ctx, s, got); err != nil {
			return 0, err
		}
		return n, nil
	}
	ps := f.sink.opts.PartSize
	if off%ps != 0 || n > ps {
		return 0, transfer.Permanent(fmt.Errorf("upload %s: part at %d+%d is not on a %d-byte boundary", f.sink.url(f.key), off, n, ps))
	}
	num := int32(off/ps + 1)
	run := checksum.Start(algorithm(alg))
	rd, sum, release, err := f.sink.prepare(body, n, progress, &run)
	if err != nil {
		return 0, err
	}
	defer release()
	if p, ok := f.kept(num, n, sum); ok {
		// Uploaded by an interrupted run, and identical: keep it.
		f.parts[num-1] = types.CompletedPart{PartNumber: aws.Int32(num), ETag: p.ETag}
		f.parts[num-1].ChecksumCRC64NVME, f.parts[num-1].ChecksumCRC32C = sumFields(alg, sum)
		f.sums.Set(off, run)
		f.echo[num-1] = p.echoed
		f.journal.add(journalPart{Part: num, Size: n, ETag: aws.ToString(p.ETag), Sum: sum, Echoed: p.echoed})
		f.reused.Add(n)
		progress(0) // nothing sent: no bandwidth spent, none counted
		return n, nil
	}
	in := &s3.UploadPartInput{
		Bucket: aws.String(f.sink.bucket), Key: aws.String(f.key), UploadId: aws.String(f.uploadID),
		PartNumber: aws.Int32(num), ContentLength: aws.Int64(n), Body: rd,
	}
	in.ChecksumCRC64NVME, in.ChecksumCRC32C = sumFields(alg, sum)
	if sum == "" {
		in.ChecksumAlgorithm = checksumAlgorithm(alg) // a trailer
	}
	f.sink.opts.Req.applyUploadPart(in)
	out, err := f.sink.client.UploadPart(ctx, in, uploadAPI)
	if err != nil {
		return 0, fmt.Errorf("upload part %d of %s: %w", num, f.sink.url(f.key), classify(err))
	}
	if run.Len() != n {
		return 0, fmt.Errorf("upload part %d of %s: the request read %d of %d bytes", num, f.sink.url(f.key), run.Len(), n)
	}
	mine := checksum.Encode(algorithm(alg), run.Sum())
	got := sumOf(alg, out.ChecksumCRC64NVME, out.ChecksumCRC32C)
	if got != "" && got != mine {
		return 0, fmt.Errorf("upload part %d of %s: the server's checksum of what it stored is %s, the bytes sent have %s: %w", num, f.sink.url(f.key), got, mine, transfer.ErrChecksum)
	}
	f.echo[num-1] = got != ""
	c := types.CompletedPart{PartNumber: aws.Int32(num), ETag: out.ETag}
	c.ChecksumCRC64NVME, c.ChecksumCRC32C = sumFields(alg, mine)
	f.parts[num-1] = c
	f.sums.Set(off, run)
	f.journal.add(journalPart{Part: num, Size: n, ETag: aws.ToString(out.ETag), Sum: mine, Echoed: got != ""})
	return n, nil
}

// keptPart is a part an interrupted run uploaded that this one keeps.
type keptPart struct {
	ETag   *string
	echoed bool
}

// kept returns part num of a resumed upload when it holds n bytes whose
// checksum is sum: by the checksum the upload's listing gives it, or by
// the journal's, for a part the listing and the journal agree on.
func (f *uploadFile) kept(num int32, n int64, sum string) (keptPart, bool) {
	p, ok := f.previous[num]
	if !ok || sum == "" || aws.ToInt64(p.Size) != n {
		return keptPart{}, false
	}
	if listed := sumOf(f.sink.opts.ChecksumAlgorithm, p.ChecksumCRC64NVME, p.ChecksumCRC32C); listed != "" {
		return keptPart{p.ETag, true}, listed == sum
	}
	jp, ok := f.resumable[num]
	return keptPart{p.ETag, jp.Echoed}, ok && jp.Sum == sum
}

// Reused implements transfer.Reuser: the bytes of the parts kept from
// an interrupted run.
func (f *uploadFile) Reused() int64 { return f.reused.Load() }

// Suspend implements transfer.Suspender: an interrupted multipart upload
// that S3 acknowledged parts of is kept, with its journal, for the next
// run to resume; one with none is aborted, and one already completed
// (interrupted while what landed was checked) keeps nothing.
func (f *uploadFile) Suspend() (bool, error) {
	if f.uploadID == "" || f.completed {
		return false, nil
	}
	if !slices.ContainsFunc(f.parts, func(p types.CompletedPart) bool { return p.PartNumber != nil }) {
		return false, f.Abort()
	}
	f.journal.close()
	return true, nil
}

// sameAsSource fails when sum, the checksum of the bytes about to be put
// as a whole object, differs from the source object's own full-object
// checksum in that algorithm (carried by a whole-object response). A
// PutObject makes the object visible at once, before the engine verifies
// it: bytes that do not match must not be sent. The read is retried.
func (f *uploadFile) sameAsSource(body *transfer.Body, sum string) error {
	want := body.Checksums[f.sink.opts.ChecksumAlgorithm]
	if sum == "" || want == "" || strings.Contains(want, "-") || want == sum {
		return nil
	}
	return retriable{fmt.Errorf("put %s: the bytes read have %s %s, the source object %s: %w",
		f.sink.url(f.key), strings.ToLower(f.sink.opts.ChecksumAlgorithm), sum, want, transfer.ErrChecksum)}
}

// prepare turns a part's body into what the SDK sends, with its checksum:
// a seekable body (a local file) is read once for the checksum and sent
// from its start; a stream goes out with a trailer (Trailer) or is first
// read into a pooled buffer. The returned reader reports progress as the
// request reads it; release returns the buffer.
func (u *UploadSink) prepare(body *transfer.Body, n int64, progress func(int64), run *checksum.Running) (io.Reader, string, func(), error) {
	nop := func() {}
	alg := algorithm(u.opts.ChecksumAlgorithm)
	if rs, ok := body.ReadCloser.(io.ReadSeeker); ok {
		bp := copyBufs.Get().(*[]byte)
		k, err := io.CopyBuffer(run, io.LimitReader(rs, n), *bp)
		copyBufs.Put(bp)
		if err == nil && k != n {
			err = &transfer.ShortBodyError{Got: k, Want: n}
		}
		if err != nil {
			return nil, "", nop, fmt.Errorf("checksum part: %w", err)
		}
		progress(0)
		if _, err := rs.Seek(0, io.SeekStart); err != nil {
			return nil, "", nop, fmt.Errorf("rewind part: %w", err)
		}
		return &progressReader{r: io.LimitReader(rs, n), progress: progress}, checksum.Encode(alg, run.Sum()), nop, nil
	}
	if u.opts.Trailer {
		// The SDK sums the body for the trailer as it sends it; run
		// sums the same bytes, for the check of what landed.
		return &progressReader{r: summingReader{io.LimitReader(body, n), run}, progress: progress}, "", nop, nil
	}
	bp := u.bufs.Get().(*[]byte)
	if int64(cap(*bp)) < n {
		b := make([]byte, n)
		bp = &b
	}
	buf := (*bp)[:n]
	var got int64
	for got < n {
		k, err := body.Read(buf[got:min(got+1<<20, n)])
		got += int64(k)
		progress(0) // data is arriving: keep the stall watch quiet
		if err != nil && got < n {
			u.bufs.Put(bp)
			if errors.Is(err, io.EOF) {
				return nil, "", nop, &transfer.ShortBodyError{Got: got, Want: n}
			}
			return nil, "", nop, err
		}
	}
	run.Update(buf)
	return &progressReader{r: bytes.NewReader(buf), progress: progress}, checksum.Encode(alg, run.Sum()), func() { u.bufs.Put(bp) }, nil
}

// progressReader reports bytes as they are read.
type progressReader struct {
	r        io.Reader
	progress func(int64)
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if n > 0 {
		p.progress(int64(n))
	}
	return n, err
}

// putObject sends a whole small object and returns the checksum the
// answer carried ("" when none).
func (f *uploadFile) putObject(ctx context.Context, rd io.Reader, n int64, sum string) (string, error) {
	o := f.sink.opts
	in := &s3.PutObjectInput{Bucket: aws.String(f.sink.bucket), Key: aws.String(f.key), Body: rd, ContentLength: aws.Int64(n)}
	in.ChecksumCRC64NVME, in.ChecksumCRC32C = sumFields(o.ChecksumAlgorithm, sum)
	if sum == "" {
		in.ChecksumAlgorithm = checksumAlgorithm(o.ChecksumAlgorithm)
	}
	if f.contentType != "" {
		in.ContentType = aws.String(f.contentType)
	}
	o.Metadata.applyPut(in)
	in.StorageClass, in.ServerSideEncryption, in.SSEKMSKeyId = o.storage()
	o.Req.applyPut(in)
	out, err := f.sink.client.PutObject(ctx, in, uploadAPI)
	if err != nil {
		return "", fmt.Errorf("put %s: %w", f.sink.url(f.key), classify(err))
	}
	f.put = true
	return sumOf(o.ChecksumAlgorithm, out.ChecksumCRC64NVME, out.ChecksumCRC32C), nil
}

// WriteAt implements transfer.File; the engine hands an upload whole
// parts (WritePart) instead.
func (f *uploadFile) WriteAt([]byte, int64) (int, error) {
	return 0, transfer.Permanent(errors.New("upload takes whole parts"))
}

// Commit completes the multipart upload (or sends an empty object).
func (f *uploadFile) Commit() error {
	if f.parts == nil {
		if f.put {
			return nil
		}
		if f.size != 0 {
			return fmt.Errorf("put %s: no data was sent", f.sink.url(f.key))
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		empty := encodeSum(newHash(f.sink.opts.ChecksumAlgorithm))
		got, err := f.putObject(ctx, bytes.NewReader(nil), 0, empty)
		if err != nil {
			return err
		}
		f.landing, err = f.sink.landed(ctx, sent{key: f.key, sum: empty, answered: true}, got)
		return err
	}
	for i, p := range f.parts {
		if p.PartNumber == nil {
			return fmt.Errorf("complete %s: part %d was never sent", f.sink.url(f.key), i+1)
		}
	}
	in := &s3.CompleteMultipartUploadInput{
		Bucket: aws.String(f.sink.bucket), Key: aws.String(f.key), UploadId: aws.String(f.uploadID),
		MultipartUpload: &types.CompletedMultipartUpload{Parts: f.parts},
		MpuObjectSize:   aws.Int64(f.size),
	}
	f.sink.opts.Req.applyComplete(in)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	out, err := f.sink.complete(ctx, in)
	if err != nil {
		return fmt.Errorf("complete %s: %w", f.sink.url(f.key), statusError(err))
	}
	f.completed = true
	if f.sums == nil {
		return nil // a server-side copy: no byte was sent
	}
	alg := f.sink.opts.ChecksumAlgorithm
	whole, err := f.sums.Sum()
	if err != nil {
		return fmt.Errorf("complete %s: %w", f.sink.url(f.key), err)
	}
	// The answer's full-object checksum is the server's, combined from
	// the parts it stored: it covers them, header or trailer.
	s := sent{key: f.key, size: f.size, sum: checksum.Encode(algorithm(alg), whole),
		answered: true, headed: true, echoed: !slices.Contains(f.echo, false)}
	f.journal.remove()
	f.landing, err = f.sink.landed(ctx, s, sumOf(alg, out.ChecksumCRC64NVME, out.ChecksumCRC32C))
	return err
}

// Abort aborts the multipart upload, even when the run was cancelled.
func (f *uploadFile) Abort() error {
	if f.uploadID == "" {
		return nil
	}
	f.journal.remove()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return f.sink.abort(ctx, f.key, f.uploadID)
}

func (u *UploadSink) abort(ctx context.Context, key, id string) error {
	in := &s3.AbortMultipartUploadInput{Bucket: aws.String(u.bucket), Key: aws.String(key), UploadId: aws.String(id)}
	if u.opts.Req.ExpectedBucketOwner != "" {
		in.ExpectedBucketOwner = aws.String(u.opts.Req.ExpectedBucketOwner)
	}
	if _, err := u.client.AbortMultipartUpload(ctx, in); err != nil {
		if err = statusError(err); errors.Is(err, transfer.ErrNotFound) {
			return nil
		}
		return fmt.Errorf("abort upload %s of %s: %w", id, u.url(key), err)
	}
	return nil
}

// classify makes a BadDigest retriable: the server saw other bytes than
// were checksummed, which a second attempt from the source can fix.
func classify(err error) error {
	err = statusError(err)
	var se *StatusError
	if errors.As(err, &se) && (se.Code == "BadDigest" || se.Code == "XAmzContentChecksumMismatch") {
		return retriable{err}
	}
	return err
}

type retriable struct{ error }

func (r retriable) Unwrap() error   { return r.error }
func (r retriable) Retriable() bool { return true }

// storage returns the storage class and server-side encryption that every
// upload (PutObject, CreateMultipartUpload, CopyObject) sends.
func (o UploadOptions) storage() (types.StorageClass, types.ServerSideEncryption, *string) {
	var kms *string
	if o.SSEKMSKeyID != "" {
		kms = aws.String(o.SSEKMSKeyID)
	}
	return types.StorageClass(o.StorageClass), types.ServerSideEncryption(o.SSE), kms
}
