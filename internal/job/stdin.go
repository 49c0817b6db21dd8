package job

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/s3pd/s3pd/pkg/store"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// StdinSpec is what a copy of standard input to one object needs
// besides a CopySpec's destination and stores.
type StdinSpec struct {
	In io.Reader
	// ExpectedSize is about how many bytes the stream holds (0: not
	// known), so that its parts stay within the store's count.
	ExpectedSize int64
	// Parts is how many parts may be in flight (and in memory) at once.
	Parts int
}

// stream is a copy of standard input, of unknown size, into one object:
// it runs without the engine, which plans objects of known size.
type stream struct {
	sink store.Streamer
	key  string
	in   io.Reader
	opts store.StreamOptions
}

// fromStdin copies standard input to the object Dst names, in parts of
// PartSize (larger when the expected size needs more than the store
// takes), through a destination that takes streams.
func (c *Copy) fromStdin(ctx context.Context, spec CopySpec) error {
	if spec.Stdin == nil {
		return specErrorf("copy - %s: no standard input", spec.Dst)
	}
	to, err := spec.Stores.EntryOf(spec.Dst)
	if err != nil {
		return &SpecError{Err: err}
	}
	if !to.Writes() || !to.Dest.Streams {
		return specErrorf("copy - %s: s3pd does not copy from standard input to %s", spec.Dst, to.NameOf())
	}
	place, err := to.Locate(spec.Dst)
	if err != nil {
		return &SpecError{Err: err}
	}
	c.LocalTo = "stdin" // the parts' checksums were checked on arrival
	dst, err := to.Dest.Open(ctx, spec.Dst, store.DestOptions{})
	if err != nil {
		return err
	}
	c.closers = append(c.closers, func() { dst.Release() })
	st, ok := dst.Sink.(store.Streamer)
	if !ok {
		return specErrorf("copy - %s: s3pd does not copy from standard input to %s", spec.Dst, to.NameOf())
	}
	in := spec.Stdin
	c.stream = &stream{sink: st, key: place.Path, in: in.In,
		opts: store.StreamOptions{PartSize: spec.PartSize, Expected: in.ExpectedSize, Parts: in.Parts}}
	return nil
}

// transfer uploads the stream, telling obs of its bytes and its one
// object; require fails it when the destination's checksum did not
// verify it (--verify require), though it is in place.
func (s *stream) transfer(ctx context.Context, obs transfer.Observer, require bool) (transfer.Summary, error) {
	o := s.opts
	o.Progress = obs.Bytes
	res, err := s.sink.Stream(ctx, s.key, s.in, o)
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
