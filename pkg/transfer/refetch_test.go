package transfer_test

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/s3pd/s3pd/pkg/transfer"
	"github.com/s3pd/s3pd/pkg/transfer/transfertest"
)

// flipOnce is a source whose first response to off 0 carries one byte
// flipped: the object fails its checksum once, then arrives whole.
type flipOnce struct {
	*transfertest.Source
	flipped atomic.Bool
}

func (s *flipOnce) Open(ctx context.Context, o *transfer.Object, off, n int64) (*transfer.Body, error) {
	b, err := s.Source.Open(ctx, o, off, n)
	if err != nil || off != 0 || !s.flipped.CompareAndSwap(false, true) {
		return b, err
	}
	data, err := io.ReadAll(b)
	if err != nil {
		return nil, err
	}
	data[0] ^= 0xff
	b.ReadCloser = io.NopCloser(&sliceReader{data: data})
	return b, nil
}

type sliceReader struct{ data []byte }

func (r *sliceReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	k := copy(p, r.data)
	r.data = r.data[k:]
	return k, nil
}

// refetchWatch records, at each Retry that names a checksum failure,
// how many times the object had been started.
type refetchWatch struct {
	transfer.NopObserver
	mu      sync.Mutex
	starts  int
	atRetry []int
}

func (w *refetchWatch) ObjectStarted(transfer.Object) { w.mu.Lock(); w.starts++; w.mu.Unlock() }

func (w *refetchWatch) Retry(_ transfer.Object, off int64, err error) {
	if errors.Is(err, transfer.ErrChecksum) && off == 0 {
		w.mu.Lock()
		w.atRetry = append(w.atRetry, w.starts)
		w.mu.Unlock()
	}
}

// TestRefetchIsReportedBeforeItStarts: an object whose bytes fail their
// checksum is fetched again, and observers hear of it (Retry with
// ErrChecksum) before the second fetch starts.
func TestRefetchIsReportedBeforeItStarts(t *testing.T) {
	src := &flipOnce{Source: transfertest.NewSource()}
	src.Add("k", transfertest.Data("k", 3*part))
	sink := transfertest.NewSink()
	w := &refetchWatch{}
	e, err := transfer.New([]transfer.Lane{{Source: src}}, sink, transfer.Options{PartSize: part, Backoff: fast, Observer: w})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := e.Run(context.Background())
	if err != nil || sum.Failed != 0 {
		t.Fatalf("run: %+v, %v", sum, err)
	}
	wantCommitted(t, sink, src.Source, "k")
	if len(w.atRetry) != 1 || w.atRetry[0] != 1 {
		t.Errorf("checksum retries seen after starts %v, want one, after the first start only", w.atRetry)
	}
}
