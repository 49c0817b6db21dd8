package transfer

import (
	"bytes"
	"context"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/s3pd/s3pd/pkg/checksum"
)

// pausedSource serves memSource's bytes a buffer at a time with a pause
// between reads, so ranges stay in flight long enough to be split.
type pausedSource struct {
	*memSource
	pause time.Duration
}

func (s *pausedSource) Open(ctx context.Context, o *Object, off, n int64) (*Body, error) {
	b, err := s.memSource.Open(ctx, o, off, n)
	if err != nil {
		return nil, err
	}
	b.ReadCloser = pausedBody{b.ReadCloser, s.pause}
	return b, nil
}

type pausedBody struct {
	io.ReadCloser
	pause time.Duration
}

func (b pausedBody) Read(p []byte) (int, error) {
	time.Sleep(b.pause)
	return b.ReadCloser.Read(p[:min(len(p), 32<<10)])
}

// countFile counts how many times each byte is written.
type countFile struct {
	*memFile
	mu     sync.Mutex
	writes []uint8
}

func (f *countFile) WriteAt(p []byte, off int64) (int, error) {
	f.mu.Lock()
	for i := range p {
		f.writes[off+int64(i)]++
	}
	f.mu.Unlock()
	return f.memFile.WriteAt(p, off)
}

type countSink struct {
	*memSink
	mu    sync.Mutex
	files map[string]*countFile
}

func (s *countSink) Create(ctx context.Context, o Object) (File, error) {
	f, err := s.memSink.Create(ctx, o)
	if err != nil {
		return nil, err
	}
	cf := &countFile{memFile: f.(*memFile), writes: make([]uint8, o.Size)}
	s.mu.Lock()
	s.files[o.Name] = cf
	s.mu.Unlock()
	return cf, nil
}

// doneObserver keeps the objects' results.
type doneObserver struct {
	NopObserver
	mu      sync.Mutex
	results []Result
}

func (o *doneObserver) ObjectDone(r Result) {
	o.mu.Lock()
	o.results = append(o.results, r)
	o.mu.Unlock()
}

// TestTailRangesSplitIntoIdleSlots: one object of four parts under a
// budget of 16. Once the four are planned, the idle slots take the
// second halves of the ranges in flight, and those split again while
// both halves keep minPiece bytes. Every byte is written exactly once,
// and the object's checksum, joined from the pieces, verifies.
func TestTailRangesSplitIntoIdleSlots(t *testing.T) {
	const part, size = 4 << 20, 16 << 20
	mem := newMemSource(map[string]int64{"k": size})
	crc := checksum.Start(checksum.CRC64NVME)
	crc.Update(mem.data["k"])
	mem.objs[0].Checksums = map[string]string{"CRC64NVME": checksum.Encode(checksum.CRC64NVME, crc.Sum())}
	src := &pausedSource{memSource: mem, pause: 4 * time.Millisecond} // about 8 MB/s per range: each needs 0.5 s
	sink := &countSink{memSink: newMemSink(), files: map[string]*countFile{}}
	obs := &doneObserver{}
	sum := runEngine(t, src, sink, Options{PartSize: part, MaxRequests: 16, Observer: obs})
	if sum.Objects != 1 || sum.Failed != 0 || !bytes.Equal(sink.committed["k"], mem.data["k"]) {
		t.Fatalf("summary %+v; content equal %v", sum, bytes.Equal(sink.committed["k"], mem.data["k"]))
	}
	if sum.Splits == 0 || sum.Requests != 4+sum.Splits+sum.Retries+sum.Hedged {
		t.Errorf("%d splits, %d requests: want splits, and one request per part and per split", sum.Splits, sum.Requests)
	}
	// Four ranges of 4 MiB, halves of at least 1 MiB: at most 12 splits.
	if sum.Splits > size/minPiece-4 {
		t.Errorf("%d splits, want at most %d: no piece under %d bytes", sum.Splits, size/minPiece-4, minPiece)
	}
	for i, n := range sink.files["k"].writes {
		if n != 1 {
			t.Fatalf("byte %d written %d times, want once", i, n)
		}
	}
	if v := obs.results[0].Verification; len(v.Checksums) != 1 || v.Checksums[0] != "crc64nvme" {
		t.Errorf("verification %+v, want crc64nvme checked", v)
	}
	t.Logf("%d splits, %d requests, peak %d in flight", sum.Splits, sum.Requests, sum.InFlightPeak)
}

// TestNoSplitWhereRangesAreHeldBack: a per-object cap or a bandwidth cap
// forbids splits (an order window does too, see splittable).
func TestNoSplitWhereRangesAreHeldBack(t *testing.T) {
	const part, size = 4 << 20, 12 << 20
	for _, tc := range []struct {
		name string
		opts Options
		sink func(*memSink) Sink
	}{
		{"per-object cap", Options{Threads: 3}, func(m *memSink) Sink { return m }},
		{"bandwidth cap", Options{Limiter: NewRateLimiter(1 << 40)}, func(m *memSink) Sink { return m }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := newMemSource(map[string]int64{"k": size})
			src := &pausedSource{memSource: mem, pause: 2 * time.Millisecond}
			m := newMemSink()
			opts := tc.opts
			opts.PartSize, opts.MaxRequests = part, 16
			sum := runEngine(t, src, tc.sink(m), opts)
			if sum.Objects != 1 || !bytes.Equal(m.committed["k"], mem.data["k"]) {
				t.Fatalf("summary %+v", sum)
			}
			if sum.Splits != 0 {
				t.Errorf("%d splits, want none", sum.Splits)
			}
		})
	}
}
