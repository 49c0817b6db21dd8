package s3store

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"io"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"golang.org/x/sync/errgroup"

	"github.com/s3pd/s3pd/pkg/store"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// StreamPartSize is the part size for a stream of unknown size: partSize,
// or, when the stream is expected to hold more than MaxParts of them,
// the smallest whole MiB that keeps it within MaxParts.
func StreamPartSize(partSize, expected int64) int64 {
	if expected <= 0 || (expected+partSize-1)/partSize <= MaxParts {
		return partSize
	}
	need := (expected + MaxParts - 1) / MaxParts
	return (need + 1<<20 - 1) &^ (1<<20 - 1)
}

// StreamResult is what Stream uploaded (the stores' contract's, as the
// job reads it).
type StreamResult = store.StreamResult

// Stream uploads r, a stream of unknown size (standard input), to key:
// one PutObject when it ends within the first part, else a multipart
// upload of parts of partSize (the last shorter) with up to conc parts
// in flight. Memory is bounded by conc+1 buffers of partSize. Every part
// carries its checksum, and the object's full-object checksum, computed
// over the stream as it is read, is compared with the server's. On an
// error or when ctx ends the multipart upload is aborted, so nothing is
// left to bill; a read blocked on r is abandoned.
func (u *UploadSink) Stream(ctx context.Context, key string, r io.Reader, partSize int64, conc int, progress func(int64)) (StreamResult, error) {
	start := time.Now()
	res := StreamResult{PartSize: partSize}
	if partSize <= 0 {
		return res, fmt.Errorf("upload %s: no part size", u.url(key))
	}
	st := &stream{sink: u, key: key, partSize: partSize, progress: progress, whole: newHash(u.opts.ChecksumAlgorithm)}
	st.free = make(chan []byte, conc+1)
	for range conc + 1 {
		st.free <- nil // allocated on first use
	}
	err := st.run(ctx, r, conc)
	res.Bytes, res.Parts, res.Requests = st.bytes, len(st.parts), st.requests
	res.Retries, res.SlowDowns = st.retries, st.slowdowns
	res.Checksum, res.Landed, res.Elapsed = st.sum, st.landed, time.Since(start)
	return res, err
}

// stream is one upload from a stream in progress.
type stream struct {
	sink     *UploadSink
	key      string
	partSize int64
	progress func(int64)
	whole    hash.Hash
	free     chan []byte // buffers not in flight

	uploadID string
	journal  *uploadJournal // names the upload, for a run after a crash to abort
	mu       sync.Mutex
	parts    []types.CompletedPart
	bytes    int64
	requests int64
	retries  int64
	// slowdowns are the retries the server asked for by throttling
	slowdowns int64
	sum       string
	landed    transfer.Verification
	echoed    int // parts whose answer carried their checksum
}

// read fills a buffer from r, once one is free: the part, and whether
// r ended.
func (st *stream) read(ctx context.Context, r io.Reader) ([]byte, bool, error) {
	var buf []byte
	select {
	case buf = <-st.free:
	case <-ctx.Done():
		return nil, false, ctx.Err()
	}
	if buf == nil {
		buf = make([]byte, st.partSize)
	}
	n, err := io.ReadFull(r, buf)
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return buf[:n], true, nil
	case err != nil:
		return nil, false, fmt.Errorf("read standard input: %w", err)
	}
	return buf, false, nil
}

func (st *stream) run(ctx context.Context, r io.Reader, conc int) (err error) {
	ctx, stop := context.WithCancel(ctx)
	defer stop() // the reader goroutine ends with the upload
	type chunk struct {
		data []byte
		last bool
		err  error
	}
	// The reads run in their own goroutine: a read of a terminal or a
	// pipe ignores ctx, and an interrupt must still abort the upload.
	chunks := make(chan chunk)
	go func() {
		for {
			data, last, err := st.read(ctx, r)
			select {
			case chunks <- chunk{data, last, err}:
			case <-ctx.Done():
				return
			}
			if last || err != nil {
				return
			}
		}
	}()
	// next waits for the next chunk, or for ctx (a part's failure
	// cancels the group's): a read that blocks holds nothing back.
	next := func(ctx context.Context) (chunk, error) {
		select {
		case c := <-chunks:
			if c.err == nil {
				st.whole.Write(c.data)
			}
			return c, c.err
		case <-ctx.Done():
			return chunk{}, context.Cause(ctx)
		}
	}
	if err := st.clearStale(ctx); err != nil {
		return err
	}
	first, err := next(ctx)
	if err != nil {
		return err
	}
	if first.last {
		return st.put(ctx, first.data)
	}
	if err := st.create(ctx); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			defer cancel()
			if aerr := st.sink.abort(actx, st.key, st.uploadID); aerr != nil {
				err = fmt.Errorf("%w; upload %s of %s is left incomplete, which the next copy to the key aborts (%v)",
					err, st.uploadID, st.sink.url(st.key), aerr)
			} else {
				st.journal.remove()
			}
		}
	}()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(conc)
	c := first
	for num := int32(1); ; num++ {
		if len(c.data) > 0 || num == 1 {
			if num > MaxParts {
				g.Wait()
				return fmt.Errorf("upload %s: the stream needs more than %d parts of %d bytes: give --expected-size (or a larger --partsize)", st.sink.url(st.key), MaxParts, st.partSize)
			}
			st.mu.Lock()
			st.parts = append(st.parts, types.CompletedPart{})
			st.mu.Unlock()
			data, n := c.data, num
			g.Go(func() error {
				defer func() { st.free <- data[:cap(data)] }()
				return st.part(gctx, n, data)
			})
		}
		if c.last {
			break
		}
		if c, err = next(gctx); err != nil {
			if werr := g.Wait(); werr != nil && ctx.Err() == nil {
				return werr // a part failed: its error, not the group's cancel
			}
			return err
		}
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return st.complete(ctx)
}

// put sends a stream that fits in one part as one PutObject.
func (st *stream) put(ctx context.Context, data []byte) error {
	o := st.sink.opts
	sum := encodeSum(st.whole)
	in := &s3.PutObjectInput{Bucket: aws.String(st.sink.bucket), Key: aws.String(st.key), ContentLength: aws.Int64(int64(len(data)))}
	in.ChecksumCRC64NVME, in.ChecksumCRC32C = sumFields(o.ChecksumAlgorithm, sum)
	o.Metadata.applyPut(in)
	in.StorageClass, in.ServerSideEncryption, in.SSEKMSKeyId = o.storage()
	o.Req.applyPut(in)
	var out *s3.PutObjectOutput
	// In memory, as a part is: retried as one.
	err := transfer.BudgetFor(transfer.StreamPart).Retry(ctx, func() (err error) {
		in.Body = &progressReader{r: bytes.NewReader(data), progress: st.progress}
		if st.requests++; st.requests > 1 {
			st.retries++
		}
		if out, err = st.sink.client.PutObject(ctx, in, uploadAPI); err != nil {
			return classify(err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("put %s: %w", st.sink.url(st.key), err)
	}
	st.bytes, st.sum = int64(len(data)), sum
	got := sumOf(o.ChecksumAlgorithm, out.ChecksumCRC64NVME, out.ChecksumCRC32C)
	st.landed, err = st.sink.landed(ctx, sent{key: st.key, size: st.bytes, sum: sum, answered: true}, got)
	return err
}

// create starts the multipart upload, with a full-object checksum.
func (st *stream) create(ctx context.Context) error {
	o := st.sink.opts
	in := &s3.CreateMultipartUploadInput{Bucket: aws.String(st.sink.bucket), Key: aws.String(st.key),
		ChecksumAlgorithm: checksumAlgorithm(o.ChecksumAlgorithm), ChecksumType: types.ChecksumTypeFullObject}
	o.Metadata.applyCreate(in)
	in.StorageClass, in.ServerSideEncryption, in.SSEKMSKeyId = o.storage()
	o.Req.applyCreate(in)
	st.requests++
	out, err := st.sink.client.CreateMultipartUpload(ctx, in)
	if err != nil {
		return fmt.Errorf("create upload %s: %w", st.sink.url(st.key), statusError(err))
	}
	st.uploadID = aws.ToString(out.UploadId)
	st.journal = st.sink.startJournal(journalHeader{Key: st.key, UploadID: st.uploadID, Stream: true,
		PartSize: st.partSize, Algorithm: o.ChecksumAlgorithm, Size: -1})
	return nil
}

// clearStale aborts the incomplete uploads of the key that earlier runs
// left (a stream's cannot be resumed: its bytes are gone), telling
// Report of each, before this one starts.
func (st *stream) clearStale(ctx context.Context) error {
	u := st.sink
	ups, err := u.pendingUploads(ctx, st.key)
	if err != nil {
		// Not a reason to refuse the upload (the permission to list
		// uploads is often not given), but said.
		u.report(fmt.Sprintf("could not look for incomplete uploads of %s that earlier runs left: %v", u.url(st.key), err))
		return nil
	}
	h, _ := u.readJournal(st.key)
	for _, up := range ups {
		id := aws.ToString(up.UploadId)
		if err := u.abort(ctx, st.key, id); err != nil {
			return err
		}
		why := "an earlier upload of this key, which a stream cannot resume"
		if h != nil && h.UploadID == id {
			why = "left by an interrupted upload of a stream, which cannot be resumed"
		}
		u.report(fmt.Sprintf("aborted the incomplete upload %s of %s, begun %s: %s", id, u.url(st.key),
			aws.ToTime(up.Initiated).UTC().Format(time.RFC3339), why))
	}
	u.removeJournal(st.key)
	return nil
}

// part sends part num with its checksum; the server checks it before
// storing the part.
func (st *stream) part(ctx context.Context, num int32, data []byte) error {
	alg := st.sink.opts.ChecksumAlgorithm
	h := newHash(alg)
	h.Write(data)
	sum := encodeSum(h)
	in := &s3.UploadPartInput{Bucket: aws.String(st.sink.bucket), Key: aws.String(st.key), UploadId: aws.String(st.uploadID),
		PartNumber: aws.Int32(num), ContentLength: aws.Int64(int64(len(data))),
		Body: &progressReader{r: bytes.NewReader(data), progress: st.progress}}
	in.ChecksumCRC64NVME, in.ChecksumCRC32C = sumFields(alg, sum)
	st.sink.opts.Req.applyUploadPart(in)
	var out *s3.UploadPartOutput
	attempts, prevThrottled := 0, false // prevThrottled: the attempt before this one was
	// The part is in memory: a failed attempt is sent again from it.
	err := transfer.BudgetFor(transfer.StreamPart).Retry(ctx, func() (err error) {
		in.Body = &progressReader{r: bytes.NewReader(data), progress: st.progress}
		out, err = st.sink.client.UploadPart(ctx, in, uploadAPI)
		st.mu.Lock()
		st.requests++
		if attempts > 0 {
			st.retries++
			if prevThrottled {
				st.slowdowns++
			}
		}
		st.mu.Unlock()
		attempts++
		prevThrottled = throttled(err)
		if err != nil {
			return classify(err)
		}
		return nil
	})
	st.mu.Lock()
	defer st.mu.Unlock()
	if err != nil {
		return fmt.Errorf("upload part %d of %s: %w", num, st.sink.url(st.key), err)
	}
	got := sumOf(alg, out.ChecksumCRC64NVME, out.ChecksumCRC32C)
	if got != "" && got != sum {
		return fmt.Errorf("upload part %d of %s: the server's checksum of what it stored is %s, the bytes sent have %s: %w", num, st.sink.url(st.key), got, sum, transfer.ErrChecksum)
	}
	if got != "" {
		st.echoed++
	}
	c := types.CompletedPart{PartNumber: aws.Int32(num), ETag: out.ETag}
	c.ChecksumCRC64NVME, c.ChecksumCRC32C = sumFields(alg, sum)
	st.parts[num-1] = c
	st.bytes += int64(len(data))
	return nil
}

// complete completes the upload and compares the server's full-object
// checksum with the one computed over the stream.
func (st *stream) complete(ctx context.Context) error {
	alg := st.sink.opts.ChecksumAlgorithm
	st.sum = encodeSum(st.whole)
	in := &s3.CompleteMultipartUploadInput{Bucket: aws.String(st.sink.bucket), Key: aws.String(st.key), UploadId: aws.String(st.uploadID),
		MultipartUpload: &types.CompletedMultipartUpload{Parts: st.parts}, MpuObjectSize: aws.Int64(st.bytes)}
	st.sink.opts.Req.applyComplete(in)
	st.requests++
	out, err := st.sink.complete(ctx, in)
	if err != nil {
		return fmt.Errorf("complete %s: %w", st.sink.url(st.key), statusError(err))
	}
	// The answer's full-object checksum is the server's, combined from
	// the parts it stored.
	st.journal.remove()
	s := sent{key: st.key, size: st.bytes, sum: st.sum, answered: true, headed: true, echoed: st.echoed == len(st.parts)}
	st.landed, err = st.sink.landed(ctx, s, sumOf(alg, out.ChecksumCRC64NVME, out.ChecksumCRC32C))
	return err
}

// wellFormed says v is a checksum of alg's width: 8 bytes for CRC64NVME,
// 4 for CRC32C.
func wellFormed(alg, v string) bool {
	b, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		return false
	}
	if alg == CRC32C {
		return len(b) == 4
	}
	return len(b) == 8
}

// throttled says err asks the client to slow down (SlowDown, 503).
func throttled(err error) bool {
	var t interface{ Throttle() bool }
	return err != nil && errors.As(classify(err), &t) && t.Throttle()
}
