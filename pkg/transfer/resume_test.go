package transfer_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/s3pd/s3pd/pkg/transfer"
	"github.com/s3pd/s3pd/pkg/transfer/transfertest"
)

// TestResumeAfterTheTailPlansTheJournaledExtents: a run planned its
// last wave in pieces shorter than a part and was interrupted while the
// last pieces were arriving; its journal holds whole pieces and
// prefixes. A rerun that plans whole parts (a budget of one) fits them
// to the extents recorded: it asks for no byte the journal holds, and
// for every other byte once.
func TestResumeAfterTheTailPlansTheJournaledExtents(t *testing.T) {
	const partSize, size = 4 << 20, 10 << 20
	synctest.Test(t, func(t *testing.T) {
		src := transfertest.NewSource()
		src.Add("k", transfertest.Data("k", size))
		sink := transfertest.NewSink()
		sink.Journal = true
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		// The pieces past 6 MiB send 400 bytes after the others ended;
		// the run is interrupted when they are asked for again.
		// (A piece begins on a multiple of 4096; its retry after 400
		// bytes does not.)
		src.Break = func(_ string, off int64, _ int) int64 {
			if off >= 6<<20 {
				return 400
			}
			return -1
		}
		src.Fault = func(_ string, off, _ int64, _ int) error {
			switch {
			case off < 6<<20:
				return nil
			case off%4096 == 0:
				time.Sleep(time.Second)
				return nil
			}
			cancel()
			return ctx.Err()
		}
		sum, _ := runCtx(t, ctx, src, sink, transfer.Options{PartSize: partSize, MaxRequests: 16, Adaptive: transfer.AdaptiveOff})
		if sum.Splits == 0 {
			t.Fatalf("summary %+v: want the tail planned in pieces", sum)
		}
		extents, ok := sink.Journaled("k")
		var held int64
		short := 0
		for off, n := range extents {
			held += n
			if n < partSize && off+n < size {
				short++
			}
		}
		if !ok || short < 2 {
			t.Fatalf("journaled %v: want pieces shorter than a part", extents)
		}
		src.Break, src.Fault = nil, nil
		before := len(src.Opens())
		_, rec := run(t, src, sink, transfer.Options{PartSize: partSize, MaxRequests: 1})
		if r := result(t, rec, "k"); r.Err != nil || r.Resumed != held || r.Bytes != size-held {
			t.Fatalf("result %+v, want the %d bytes journaled resumed and the other %d fetched", r, held, size-held)
		}
		var asked int64
		for _, o := range src.Opens()[before:] {
			asked += o.N
			for off, n := range extents {
				if o.Off < off+n && off < o.Off+o.N {
					t.Errorf("the rerun asked for %d+%d, which overlaps the extent %d+%d journaled", o.Off, o.N, off, n)
				}
			}
		}
		if asked != size-held {
			t.Errorf("the rerun asked for %d bytes, want the %d not journaled", asked, size-held)
		}
		wantCommitted(t, sink, src, "k")
	})
}
