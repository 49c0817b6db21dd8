package transfer_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/s3pd/s3pd/pkg/transfer"
	"github.com/s3pd/s3pd/pkg/transfer/transfertest"
)

// stallSource stalls the first body of object key after stallAt bytes
// until its request is cancelled; every other body flows.
type stallSource struct {
	*transfertest.Source
	key     string
	stallAt int64
	stalled atomic.Bool
}

func (s *stallSource) Open(ctx context.Context, o *transfer.Object, off, n int64) (*transfer.Body, error) {
	b, err := s.Source.Open(ctx, o, off, n)
	if err != nil || o.Key != s.key || off != 0 || !s.stalled.CompareAndSwap(false, true) {
		return b, err
	}
	b.ReadCloser = &stallBody{ctx: ctx, r: b.ReadCloser, left: s.stallAt}
	return b, nil
}

// stallBody passes left bytes on, then blocks until its context ends.
type stallBody struct {
	ctx  context.Context
	r    io.ReadCloser
	left int64
}

func (b *stallBody) Read(p []byte) (int, error) {
	if b.left == 0 {
		<-b.ctx.Done()
		return 0, b.ctx.Err()
	}
	n, err := b.r.Read(p[:min(int64(len(p)), b.left)])
	b.left -= int64(n)
	return n, err
}

func (b *stallBody) Close() error { return b.r.Close() }

// restOpens returns the requests for key after the first, sorted by
// offset.
func restOpens(src *transfertest.Source, key string) []transfertest.Range {
	var rs []transfertest.Range
	first := true
	for _, r := range src.Opens() {
		if r.Key != key {
			continue
		}
		if first {
			first = false
			continue
		}
		rs = append(rs, r)
	}
	slices.SortFunc(rs, func(a, b transfertest.Range) int { return int(a.Off - b.Off) })
	return rs
}

// sixteen returns a source of 16 objects of size bytes, k listed first,
// and the options that fetch each in one range over 8 slots, one object
// open at a time: k's range is a whole part or object, alone in flight,
// and its rest has every other slot idle.
func sixteen(size int64, threshold int64) (*transfertest.Source, transfer.Options) {
	mem := transfertest.NewSource()
	mem.Add("k", transfertest.Data("k", int(size)))
	for i := range 15 {
		k := fmt.Sprint("o", i)
		mem.Add(k, transfertest.Data(k, int(size)))
	}
	return mem, transfer.Options{PartSize: 2 * size, Threshold: threshold, MaxRequests: 8, Workers: 1,
		Adaptive: transfer.AdaptiveOff, StallTimeout: time.Minute}
}

// TestStragglersRestGoesOverIdleSlots: the last range of a run stalls
// after 1 MiB of its 4 MiB while its peers have ended. It is taken over,
// and the 3 MiB it has left are asked for in pieces over the idle
// slots, every byte once and each piece on a multiple of 4096, not in
// one request over one connection. The object is verified against its
// CRC (the pieces' sums joined to the range's), whether the range was a
// whole-object fetch or a part.
func TestStragglersRestGoesOverIdleSlots(t *testing.T) {
	for _, threshold := range []int64{0, 1} {
		name := map[int64]string{0: "whole", 1: "part"}[threshold]
		t.Run(name, func(t *testing.T) { testRestOverIdleSlots(t, threshold) })
	}
}

func testRestOverIdleSlots(t *testing.T, threshold int64) {
	const size, stallAt = 4 << 20, 1 << 20
	synctest.Test(t, func(t *testing.T) {
		// Parts of 8 MiB: a 4 MiB object is fetched whole, or with a
		// threshold of 1 in a ranged request.
		mem, opts := sixteen(size, threshold)
		mem.WholeChecksums = func(key string) map[string]string { return mem.Object(key).Checksums }
		src := &stallSource{Source: mem, key: "k", stallAt: stallAt}
		sink := transfertest.NewSink()
		sum, rec := run(t, src, sink, opts)
		if sum.Objects != 16 || sum.Failed != 0 {
			t.Fatalf("summary %+v: want every object", sum)
		}
		if sum.Hedged != 1 || sum.Retries != 0 {
			t.Errorf("hedged %d, retries %d; want the stalled range taken over once", sum.Hedged, sum.Retries)
		}
		rest := restOpens(mem, "k")
		if len(rest) < 4 {
			t.Fatalf("after the stall, requests %v: want the rest in pieces over the idle slots", rest)
		}
		at := int64(stallAt)
		for i, r := range rest {
			if r.Off != at {
				t.Fatalf("requests %v: want them to cover bytes %d-%d once, in order", rest, stallAt, size-1)
			}
			if i > 0 && r.Off%4096 != 0 {
				t.Errorf("piece at %d: want it on a multiple of 4096", r.Off)
			}
			at += r.N
		}
		if at != size {
			t.Errorf("requests %v end at %d, want %d", rest, at, size)
		}
		if sum.Splits < int64(len(rest)-1) {
			t.Errorf("splits %d, want the %d pieces besides the takeover counted", sum.Splits, len(rest)-1)
		}
		if sum.Bytes != 16*size || sum.Overfetch != 0 {
			t.Errorf("bytes %d, overfetch %d: want every byte written once", sum.Bytes, sum.Overfetch)
		}
		r := result(t, rec, "k")
		if !r.Verification.Verified() {
			t.Errorf("verification %+v: want the joined CRC checked", r.Verification)
		}
		wantCommitted(t, sink, mem, "k")
	})
}

// TestStragglersRestFailsWithItsPiece: a piece of a straggler's rest
// that fails for good fails the object with that piece's error, and
// nothing is committed.
func TestStragglersRestFailsWithItsPiece(t *testing.T) {
	const size, stallAt = 4 << 20, 1 << 20
	synctest.Test(t, func(t *testing.T) {
		mem, opts := sixteen(size, 1)
		broken := errors.New("piece refused")
		mem.Fault = func(key string, off, _ int64, _ int) error {
			if key == "k" && off > stallAt { // the pieces beside the range's own
				return transfer.Permanent(broken)
			}
			return nil
		}
		src := &stallSource{Source: mem, key: "k", stallAt: stallAt}
		sink := transfertest.NewSink()
		sum, rec := run(t, src, sink, opts)
		if sum.Failed != 1 || sum.Objects != 15 || sum.Hedged != 1 || sum.Splits == 0 {
			t.Fatalf("summary %+v: want k's rest split after its takeover, k failed and the rest done", sum)
		}
		if r := result(t, rec, "k"); !errors.Is(r.Err, broken) {
			t.Errorf("k's error %v: want the piece's", r.Err)
		}
		if _, ok := sink.Committed()["k"]; ok {
			t.Error("k committed: want nothing at its final name")
		}
	})
}

// TestInterruptAmongRestPiecesResumesExactly: a run is interrupted
// while a straggler's rest is fetched in pieces. The journal keeps what
// the range wrote in order before the cut, and a rerun asks for every
// other byte once and lands the object byte for byte.
func TestInterruptAmongRestPiecesResumesExactly(t *testing.T) {
	const size, stallAt = 4 << 20, 1 << 20
	synctest.Test(t, func(t *testing.T) {
		mem, opts := sixteen(size, 1)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		mem.Fault = func(key string, off, _ int64, _ int) error {
			if key == "k" && off > stallAt { // the pieces beside the range's own
				cancel()
				return ctx.Err()
			}
			return nil
		}
		src := &stallSource{Source: mem, key: "k", stallAt: stallAt}
		sink := transfertest.NewSink()
		sink.Journal = true
		sum, _ := runCtx(t, ctx, src, sink, opts)
		if sum.Hedged != 1 || sum.Splits == 0 {
			t.Fatalf("summary %+v: want the stalled range taken over and its rest split", sum)
		}
		extents, ok := sink.Journaled("k")
		if !ok {
			t.Fatal("k not kept for resume")
		}
		var held int64
		for off, n := range extents {
			if off != 0 {
				t.Errorf("journaled %v: want only the prefix written in order", extents)
			}
			held += n
		}
		if held < stallAt {
			t.Fatalf("journaled %v: want at least the %d bytes before the stall", extents, stallAt)
		}
		mem.Fault = nil
		before := len(mem.Opens())
		_, rec := run(t, mem, sink, transfer.Options{PartSize: 2 * size, Threshold: 1, MaxRequests: 8})
		if r := result(t, rec, "k"); r.Err != nil || r.Resumed != held || r.Bytes != size-held {
			t.Fatalf("result %+v, want %d bytes resumed and %d fetched", r, held, size-held)
		}
		var asked int64
		for _, o := range mem.Opens()[before:] {
			if o.Key == "k" {
				asked += o.N
			}
		}
		if asked != size-held {
			t.Errorf("the rerun asked for %d bytes of k, want the %d not journaled", asked, size-held)
		}
		wantCommitted(t, sink, mem, "k")
	})
}

// blockSource blocks every body of key from byte from on until its
// request is cancelled.
type blockSource struct {
	*stallSource
	from int64
}

func (s *blockSource) Open(ctx context.Context, o *transfer.Object, off, n int64) (*transfer.Body, error) {
	b, err := s.stallSource.Open(ctx, o, off, n)
	if err != nil || o.Key != s.key || off < s.from {
		return b, err
	}
	b.ReadCloser = &stallBody{ctx: ctx, r: b.ReadCloser}
	return b, nil
}

// TestStragglersRestStopsWithTheRange: when the range taken over fails
// for good in its own next attempt, the pieces of its rest are stopped
// (here they would block until cancelled), and the object fails with
// the range's error.
func TestStragglersRestStopsWithTheRange(t *testing.T) {
	const size, stallAt = 4 << 20, 1 << 20
	synctest.Test(t, func(t *testing.T) {
		mem, opts := sixteen(size, 1)
		refused := errors.New("range refused")
		mem.Fault = func(key string, off, _ int64, _ int) error {
			if key == "k" && off == stallAt { // the range's own next attempt
				return transfer.Permanent(refused)
			}
			return nil
		}
		src := &blockSource{stallSource: &stallSource{Source: mem, key: "k", stallAt: stallAt}, from: stallAt + 1}
		sum, rec := run(t, src, transfertest.NewSink(), opts)
		if sum.Failed != 1 || sum.Hedged != 1 || sum.Splits == 0 {
			t.Fatalf("summary %+v: want k failed after its rest was split", sum)
		}
		if r := result(t, rec, "k"); !errors.Is(r.Err, refused) {
			t.Errorf("k's error %v: want the range's own", r.Err)
		}
		// The bubble's clock: pieces left running would end only with the
		// stall timeout, a minute on.
		if sum.Elapsed >= opts.StallTimeout {
			t.Errorf("the run took %s: want its pieces stopped with the range, not by the stall timeout", sum.Elapsed)
		}
	})
}
