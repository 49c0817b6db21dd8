package job

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/s3pd/s3pd/pkg/s3store"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// StdinSpec is what a copy of standard input to one object needs
// besides a CopySpec's destination and client.
type StdinSpec struct {
	In io.Reader
	// Upload is what the object gets.
	Upload s3store.UploadOptions
	// ExpectedSize is about how many bytes the stream holds (0: not
	// known), so that its parts stay within S3's 10,000.
	ExpectedSize int64
	// Parts is how many parts may be in flight (and in memory) at once.
	Parts int
}

// stream is a copy of standard input, of unknown size, into one object
// by a multipart upload: it runs without the engine, which plans objects
// of known size.
type stream struct {
	sink     *s3store.UploadSink
	key, alg string
	in       io.Reader
	partSize int64
	parts    int
}

// fromStdin copies standard input to the object Dst names, in parts of
// PartSize (larger when the expected size needs more than S3's 10,000).
func (c *Copy) fromStdin(ctx context.Context, spec CopySpec) error {
	u, err := s3store.ParseRawURL(spec.Dst)
	if err != nil {
		return &SpecError{Err: err}
	}
	if spec.Stdin == nil {
		return specErrorf("copy - %s: no standard input", spec.Dst)
	}
	c.LocalTo = "stdin" // the parts' checksums were checked on arrival
	client, err := s3store.NewClient(ctx, u.Bucket, spec.Client)
	if err != nil {
		return err
	}
	in := spec.Stdin
	c.stream = &stream{sink: s3store.NewUploadSink(client, u.Bucket, in.Upload), key: u.Key, alg: in.Upload.ChecksumAlgorithm,
		in: in.In, partSize: s3store.StreamPartSize(spec.PartSize, in.ExpectedSize), parts: in.Parts}
	return nil
}

// transfer uploads the stream, telling obs of its bytes and its one
// object; require fails it when the destination's checksum did not
// verify it (--verify require), though it is in place.
func (s *stream) transfer(ctx context.Context, obs transfer.Observer, require bool) (transfer.Summary, error) {
	res, err := s.sink.Stream(ctx, s.key, s.in, s.partSize, s.parts, obs.Bytes)
	if err == nil && require {
		if err = transfer.Required(res.Landed, res.Bytes); err != nil {
			err = fmt.Errorf("%s: %w; the object is in place", s.sink.Destination(s.key), err)
		}
	}
	result := transfer.Result{Object: transfer.Object{Key: s.key, Name: s.key, Size: res.Bytes},
		Bytes: res.Bytes, Elapsed: res.Elapsed, Err: err}
	// The stream is the run's one object: listed, and given its verdict.
	sum := transfer.Summary{Listed: 1, Bytes: res.Bytes, Elapsed: res.Elapsed, Requests: res.Requests, Retries: res.Retries, SlowDowns: res.SlowDowns}
	if err != nil {
		sum.Failed = 1
	} else {
		sum.Objects = 1
		result.Verification = res.Landed
	}
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		result.Err = context.Canceled
	}
	obs.ObjectDone(result)
	return sum, err
}
