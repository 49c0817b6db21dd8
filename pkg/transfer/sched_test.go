package transfer

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// crowdSource holds every request until want requests are open at once
// (or a generous timeout passes), and records the most it saw: a
// scheduler that allows want requests reaches it, one that allows fewer
// never does.
type crowdSource struct {
	*memSource
	want     int64
	inFlight atomic.Int64
	peak     atomic.Int64
	reached  chan struct{}
	once     sync.Once
}

func newCrowdSource(m *memSource, want int64) *crowdSource {
	return &crowdSource{memSource: m, want: want, reached: make(chan struct{})}
}

func (s *crowdSource) Open(ctx context.Context, o *Object, off, n int64) (*Body, error) {
	now := s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	for {
		p := s.peak.Load()
		if now <= p || s.peak.CompareAndSwap(p, now) {
			break
		}
	}
	if now >= s.want {
		s.once.Do(func() { close(s.reached) })
	}
	select {
	case <-s.reached:
	case <-time.After(2 * time.Second):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return s.memSource.Open(ctx, o, off, n)
}

func TestOneObjectTakesTheWholeBudget(t *testing.T) {
	const part, parts, budget = 1000, 64, 32
	tests := []struct {
		name     string
		threads  int
		wantPeak int64
	}{
		{"no per-object cap", 0, budget},
		{"a per-object cap", 4, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mem := newMemSource(map[string]int64{"k": part * parts})
			src := newCrowdSource(mem, tt.wantPeak)
			sink := newMemSink()
			sum := runEngine(t, src, sink, Options{PartSize: part, MaxRequests: budget, Threads: tt.threads, BufferSize: 256})
			if sum.Objects != 1 || !bytes.Equal(sink.committed["k"], mem.data["k"]) {
				t.Fatalf("summary %+v; content equal %v", sum, bytes.Equal(sink.committed["k"], mem.data["k"]))
			}
			if got := src.peak.Load(); got != tt.wantPeak {
				t.Errorf("peak requests in flight %d, want %d (budget %d, threads %d)", got, tt.wantPeak, budget, tt.threads)
			}
		})
	}
}

// windowFile is a memFile that declares an order window and records how
// far from 0 its bytes are written.
type windowFile struct {
	*memFile
	window  int64
	mu      sync.Mutex
	filled  map[int64]bool // offsets of the parts written
	written atomic.Int64   // contiguous bytes written from 0
}

func (f *windowFile) OrderWindow() int64 { return f.window }

func (f *windowFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.memFile.WriteAt(p, off)
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := off; i < off+int64(n); i++ {
		f.filled[i] = true
	}
	w := f.written.Load()
	for f.filled[w] {
		w++
	}
	f.written.Store(w)
	return n, err
}

type windowSink struct {
	*memSink
	window int64
	mu     sync.Mutex
	file   *windowFile
}

func (s *windowSink) Create(ctx context.Context, o Object) (File, error) {
	f, err := s.memSink.Create(ctx, o)
	if err != nil {
		return nil, err
	}
	wf := &windowFile{memFile: f.(*memFile), window: s.window, filled: map[int64]bool{}}
	s.mu.Lock()
	s.file = wf
	s.mu.Unlock()
	return wf, nil
}

// windowSource checks, at each request, that the range ends within the
// sink's order window of what is written.
type windowSource struct {
	*memSource
	sink       *windowSink
	violations atomic.Int64
	worst      atomic.Int64 // the furthest a range reached past the written bytes
	inFlight   atomic.Int64
	peak       atomic.Int64
}

func (s *windowSource) Open(ctx context.Context, o *Object, off, n int64) (*Body, error) {
	s.sink.mu.Lock()
	f := s.sink.file
	s.sink.mu.Unlock()
	if past := off + n - f.written.Load(); past > s.sink.window {
		s.violations.Add(1)
		if past > s.worst.Load() {
			s.worst.Store(past)
		}
	}
	now := s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	if now > s.peak.Load() {
		s.peak.Store(now)
	}
	time.Sleep(time.Millisecond) // let ranges overlap
	return s.memSource.Open(ctx, o, off, n)
}

func TestOrderWindowBoundsRangesAhead(t *testing.T) {
	const part, window = 1000, 3500
	mem := newMemSource(map[string]int64{"k": 40 * part})
	sink := &windowSink{memSink: newMemSink(), window: window}
	src := &windowSource{memSource: mem, sink: sink}
	sum := runEngine(t, src, sink, Options{PartSize: part, MaxRequests: 64, BufferSize: 128})
	if sum.Objects != 1 || !bytes.Equal(sink.committed["k"], mem.data["k"]) {
		t.Fatalf("summary %+v", sum)
	}
	if n := src.violations.Load(); n > 0 {
		t.Errorf("%d ranges started beyond the order window of %d (furthest %d past the written bytes)", n, window, src.worst.Load())
	}
	if p := src.peak.Load(); p < 2 {
		t.Errorf("peak requests in flight %d: the window of 3 parts should let ranges overlap", p)
	}
}

// gatedSource holds every request until the sink has created n files,
// and records the order in which ranges were asked for.
type gatedSource struct {
	*memSource
	sink  *countingSink
	n     int32
	mu    sync.Mutex
	held  bool // the first request was held
	order []string
}

type countingSink struct {
	*memSink
	creates atomic.Int32
}

func (s *countingSink) Create(ctx context.Context, o Object) (File, error) {
	s.creates.Add(1)
	return s.memSink.Create(ctx, o)
}

// Open holds every request until n files were created, and the first
// one 300 ms longer (of a synctest bubble's clock), whether or not it
// had to wait for them: the object joins the scheduler just after its
// file is created, and the next range is chosen once this request's
// slot is free.
func (s *gatedSource) Open(ctx context.Context, o *Object, off, n int64) (*Body, error) {
	for deadline := time.Now().Add(2 * time.Second); s.sink.creates.Load() < s.n && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	s.mu.Lock()
	first := !s.held
	s.held = true
	s.mu.Unlock()
	if first {
		time.Sleep(300 * time.Millisecond)
	}
	s.mu.Lock()
	s.order = append(s.order, fmt.Sprint(o.Key, "@", off))
	s.mu.Unlock()
	return s.memSource.Open(ctx, o, off, n)
}

func TestLargestObjectGoesFirst(t *testing.T) {
	// In a bubble: the source's waits are on the bubble's clock, and
	// the next range is chosen once every goroutine is blocked, not after
	// a real pause the machine's load could outlast.
	synctest.Test(t, func(t *testing.T) {
		// One request at a time, two objects open: the big one's ranges go
		// first until what it has left is no more than the small one's.
		const part = 1000
		mem := newMemSource(map[string]int64{"small": 2 * part, "big": 6 * part})
		mem.objs[0], mem.objs[1] = Object{Key: "small", Name: "small", Size: 2 * part, ETag: `"small"`}, Object{Key: "big", Name: "big", Size: 6 * part, ETag: `"big"`}
		sink := &countingSink{memSink: newMemSink()}
		src := &gatedSource{memSource: mem, sink: sink, n: 2}
		sum := runEngine(t, src, sink, Options{PartSize: part, MaxRequests: 1})
		if sum.Objects != 2 {
			t.Fatalf("summary %+v", sum)
		}
		// The first request may go out before the second object opened;
		// after it, big's ranges come first until 2 parts of it are left.
		got := src.order[1:4]
		for _, r := range got {
			if r[:3] != "big" {
				t.Fatalf("request order %v: want big's ranges while it has more bytes left than small", src.order)
			}
		}
	})
}

// tricklingSource sends every body in 1 KiB pieces, 5 ms apart, and
// stalls the first attempt at the range starting at 0 after 2 KiB until
// its request is cancelled.
type tricklingSource struct {
	*memSource
	stalled atomic.Bool
}

func (s *tricklingSource) Open(ctx context.Context, o *Object, off, n int64) (*Body, error) {
	b, err := s.memSource.Open(ctx, o, off, n)
	if err != nil {
		return nil, err
	}
	stall := off == 0 && s.stalled.CompareAndSwap(false, true)
	b.ReadCloser = &trickle{ctx: ctx, r: b.ReadCloser, stallAt: map[bool]int64{true: 2048, false: -1}[stall]}
	return b, nil
}

type trickle struct {
	ctx     context.Context
	r       io.ReadCloser
	sent    int64
	stallAt int64
}

func (t *trickle) Read(p []byte) (int, error) {
	if t.sent == t.stallAt {
		<-t.ctx.Done()
		return 0, t.ctx.Err()
	}
	select {
	case <-time.After(5 * time.Millisecond):
	case <-t.ctx.Done():
		return 0, t.ctx.Err()
	}
	n, err := t.r.Read(p[:min(len(p), 1024)])
	t.sent += int64(n)
	return n, err
}

func (t *trickle) Close() error { return t.r.Close() }

func TestStragglerIsTakenOverFromTheByteItReached(t *testing.T) {
	const part = 32 << 10
	mem := newMemSource(map[string]int64{"k": 16 * part})
	src := &tricklingSource{memSource: mem}
	sink := newMemSink()
	// The stall timeout is far away: only a takeover ends the stall soon.
	sum := runEngine(t, src, sink, Options{PartSize: part, MaxRequests: 4, BufferSize: 1024, StallTimeout: time.Minute})
	if sum.Objects != 1 || !bytes.Equal(sink.committed["k"], mem.data["k"]) {
		t.Fatalf("summary %+v; content equal %v", sum, bytes.Equal(sink.committed["k"], mem.data["k"]))
	}
	if sum.Hedged != 1 || sum.Retries != 0 {
		t.Errorf("hedged %d, retries %d; want the stalled range taken over once, not retried", sum.Hedged, sum.Retries)
	}
	if _, ok := mem.ranges.Load(fmt.Sprint("k ", 2048, " ", part-2048)); !ok {
		t.Errorf("no request for bytes 2048-%d: a takeover asks from the byte the range reached", part-1)
	}
	if sum.Bytes != 16*part {
		t.Errorf("bytes %d, want %d: every byte written once", sum.Bytes, 16*part)
	}
}

// heldSink counts the files created and not yet committed or aborted,
// and the most of them at once.
type heldSink struct {
	*memSink
	held, peak atomic.Int64
}

type heldFile struct {
	File
	s *heldSink
}

func (s *heldSink) Create(ctx context.Context, o Object) (File, error) {
	f, err := s.memSink.Create(ctx, o)
	if err != nil {
		return nil, err
	}
	n := s.held.Add(1)
	for p := s.peak.Load(); n > p && !s.peak.CompareAndSwap(p, n); p = s.peak.Load() {
	}
	return heldFile{f, s}, nil
}

func (f heldFile) Commit() error { f.s.held.Add(-1); return f.File.Commit() }
func (f heldFile) Abort() error  { f.s.held.Add(-1); return f.File.Abort() }

// TestObjectsOpenAsTheWindowNeeds: 96 small objects under a window of 4
// requests and the default 256 workers hold a few windows' worth of
// files open at once, not every object: an object opens once the objects
// with ranges still to start are fewer than the window.
func TestObjectsOpenAsTheWindowNeeds(t *testing.T) {
	sizes := map[string]int64{}
	for i := range 96 {
		sizes[fmt.Sprintf("obj%02d", i)] = 1000
	}
	sink := &heldSink{memSink: newMemSink()}
	const window = 4
	sum := runEngine(t, slowSource{newMemSource(sizes)}, sink, Options{PartSize: 1000, MaxRequests: window, Adaptive: AdaptiveOff})
	if sum.Objects != 96 || len(sink.committed) != 96 {
		t.Fatalf("%d objects, %d committed; want 96", sum.Objects, len(sink.committed))
	}
	// In flight (window), ready to start (window), and a few between
	// their last byte and their commit.
	if p := sink.peak.Load(); p > 3*window {
		t.Fatalf("%d files open at once under a window of %d; want at most %d", p, window, 3*window)
	}
}
