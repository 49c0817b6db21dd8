package transfer

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// memSource is a small hand-written source over byte slices.
type memSource struct {
	objs  []Object
	data  map[string][]byte
	fault func(key string, off, n int64, attempt int) error // optional
	// short makes the first body of a range starting at a multiple of
	// 1000 end after this many bytes.
	short    int64
	attempts sync.Map // key/off -> *atomic.Int32
	opens    atomic.Int64
	ranges   sync.Map // "key off n" -> struct{}
}

func newMemSource(sizes map[string]int64) *memSource {
	s := &memSource{data: map[string][]byte{}}
	for k, n := range sizes {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i*7 + len(k))
		}
		s.data[k] = b
		s.objs = append(s.objs, Object{Key: k, Name: k, Size: n, ETag: fmt.Sprintf("%q", k)})
	}
	return s
}

func (s *memSource) List(ctx context.Context, emit func(Object) error) error {
	for _, o := range s.objs {
		if err := emit(o); err != nil {
			return err
		}
	}
	return nil
}

func (s *memSource) Open(ctx context.Context, o *Object, off, n int64) (*Body, error) {
	s.opens.Add(1)
	data := s.data[o.Key]
	a, _ := s.attempts.LoadOrStore(fmt.Sprint(o.Key, off), new(atomic.Int32))
	attempt := int(a.(*atomic.Int32).Add(1))
	if s.fault != nil {
		if err := s.fault(o.Key, off, n, attempt); err != nil {
			return nil, err
		}
	}
	s.ranges.Store(fmt.Sprint(o.Key, " ", off, " ", n), struct{}{})
	if n < 0 {
		off, n = 0, int64(len(data))
	}
	body := data[off : off+n]
	if s.short > 0 && attempt == 1 && off%1000 == 0 && int64(len(body)) > s.short {
		body = body[:s.short] // the connection breaks mid-way
	}
	return &Body{ReadCloser: io.NopCloser(bytes.NewReader(body)), Off: off, Len: n, Size: int64(len(data)), ETag: fmt.Sprintf("%q", o.Key)}, nil
}

// memSink collects objects in memory.
type memSink struct {
	mu        sync.Mutex
	files     map[string]*memFile
	committed map[string][]byte
}

func newMemSink() *memSink {
	return &memSink{files: map[string]*memFile{}, committed: map[string][]byte{}}
}

type memFile struct {
	s    *memSink
	name string
	mu   sync.Mutex
	b    []byte
}

func (s *memSink) Create(_ context.Context, o Object) (File, error) {
	f := &memFile{s: s, name: o.Name, b: make([]byte, o.Size)}
	s.mu.Lock()
	s.files[o.Name] = f
	s.mu.Unlock()
	return f, nil
}

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return copy(f.b[off:], p), nil
}

func (f *memFile) Commit() error {
	f.s.mu.Lock()
	f.s.committed[f.name] = f.b
	f.s.mu.Unlock()
	return nil
}

func (f *memFile) Abort() error { return nil }

func runEngine(t *testing.T, src Source, sink Sink, opts Options) Summary {
	t.Helper()
	e, err := New([]Lane{{Name: "a", Source: src}}, sink, opts)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := e.Run(context.Background())
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return sum
}

func TestEngineMovesEveryByte(t *testing.T) {
	const part = 1000
	tests := []struct {
		name string
		size int64
	}{
		{"empty", 0},
		{"one byte", 1},
		{"below threshold", part - 1},
		{"exactly one part", part},
		{"exactly three parts", 3 * part},
		{"three parts plus one byte", 3*part + 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := newMemSource(map[string]int64{"k": tt.size})
			sink := newMemSink()
			sum := runEngine(t, src, sink, Options{PartSize: part, Threads: 2, BufferSize: 64})
			if sum.Objects != 1 || sum.Failed != 0 || sum.Bytes != tt.size {
				t.Fatalf("summary %+v, want 1 object of %d bytes", sum, tt.size)
			}
			if got := sink.committed["k"]; !bytes.Equal(got, src.data["k"]) {
				t.Fatalf("content differs: got %d bytes, want %d", len(got), len(src.data["k"]))
			}
		})
	}
}

func TestEnginePlansRanges(t *testing.T) {
	src := newMemSource(map[string]int64{"small": 999, "big": 2500})
	runEngine(t, src, newMemSink(), Options{PartSize: 1000})
	want := []string{"small 0 -1", "big 0 1000", "big 1000 1000", "big 2000 500"}
	for _, r := range want {
		if _, ok := src.ranges.Load(r); !ok {
			t.Errorf("range %q was not requested", r)
		}
	}
	n := 0
	src.ranges.Range(func(k, _ any) bool { n++; return true })
	if n != len(want) {
		t.Errorf("got %d distinct requests, want %d", n, len(want))
	}
}

func TestEngineRetriesAndResumes(t *testing.T) {
	src := newMemSource(map[string]int64{"k": 5000})
	src.short = 300 // every first attempt breaks after 300 bytes
	sink := newMemSink()
	sum := runEngine(t, src, sink, Options{PartSize: 1000, BufferSize: 128, Backoff: Backoff{Base: time.Millisecond, Cap: time.Millisecond, MaxAttempts: 3}})
	if sum.Failed != 0 || !bytes.Equal(sink.committed["k"], src.data["k"]) {
		t.Fatalf("summary %+v; content equal %v", sum, bytes.Equal(sink.committed["k"], src.data["k"]))
	}
	if sum.Retries != 5 {
		t.Errorf("retries %d, want 5 (one per part)", sum.Retries)
	}
	if sum.Bytes != 5000 {
		t.Errorf("bytes %d, want 5000: a resumed range must not refetch what arrived", sum.Bytes)
	}
	// The retry of part 0 asks for bytes 300-999 only.
	if _, ok := src.ranges.Load("k 300 700"); !ok {
		t.Errorf("no resumed request for bytes 300-999")
	}
}

func TestEngineFailsPermanentErrorsOnce(t *testing.T) {
	src := newMemSource(map[string]int64{"bad": 10, "good": 10})
	src.fault = func(key string, off, n int64, attempt int) error {
		if key == "bad" {
			return errDenied
		}
		return nil
	}
	sink := newMemSink()
	sum := runEngine(t, src, sink, Options{PartSize: 1000, Backoff: Backoff{Base: time.Millisecond, Cap: time.Millisecond, MaxAttempts: 5}})
	if sum.Failed != 1 || sum.Objects != 1 {
		t.Fatalf("summary %+v, want 1 failed and 1 transferred", sum)
	}
	if got := src.opens.Load(); got != 2 {
		t.Errorf("opens %d, want 2: 403 must not be retried", got)
	}
	if _, ok := sink.committed["bad"]; ok {
		t.Errorf("failed object was committed")
	}
}

func TestEngineRetriesSlowDown(t *testing.T) {
	src := newMemSource(map[string]int64{"k": 3000})
	src.fault = func(key string, off, n int64, attempt int) error {
		if attempt <= 2 {
			return errSlowDown
		}
		return nil
	}
	sink := newMemSink()
	sum := runEngine(t, src, sink, Options{PartSize: 1000, Backoff: Backoff{Base: time.Millisecond, Cap: 2 * time.Millisecond, MaxAttempts: 5}})
	if sum.Failed != 0 || sum.Retries != 6 {
		t.Fatalf("summary %+v, want success after 6 retries", sum)
	}
}

func TestEngineRejectsModifiedObject(t *testing.T) {
	src := newMemSource(map[string]int64{"k": 3000})
	src.objs[0].ETag = `"old"`
	sum := runEngine(t, src, newMemSink(), Options{PartSize: 1000})
	if sum.Failed != 1 {
		t.Fatalf("summary %+v, want the object to fail", sum)
	}
}

// stallSource never sends a byte on its first attempt.
type stallSource struct{ *memSource }

func (s stallSource) Open(ctx context.Context, o *Object, off, n int64) (*Body, error) {
	if s.opens.Load() == 0 {
		s.opens.Add(1)
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return s.memSource.Open(ctx, o, off, n)
}

func TestEngineAbandonsStalledRange(t *testing.T) {
	src := stallSource{newMemSource(map[string]int64{"k": 100})}
	sink := newMemSink()
	start := time.Now()
	sum := runEngine(t, src, sink, Options{StallTimeout: 100 * time.Millisecond, Backoff: Backoff{Base: time.Millisecond, Cap: time.Millisecond, MaxAttempts: 3}})
	if sum.Failed != 0 || sum.Retries != 1 {
		t.Fatalf("summary %+v, want success after one retry", sum)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("stall detected after %s, want well under 5s", d)
	}
}

func TestEngineStreamsListing(t *testing.T) {
	// The queue is bounded: a lister that emits far more objects than the
	// queue holds still finishes, and never runs ahead by more than it.
	sizes := map[string]int64{}
	for i := range 500 {
		sizes[fmt.Sprintf("k%04d", i)] = 10
	}
	src := newMemSource(sizes)
	sum := runEngine(t, src, newMemSink(), Options{QueueSize: 4, Workers: 2})
	if sum.Objects != 500 {
		t.Fatalf("objects %d, want 500", sum.Objects)
	}
}

func TestRulesMatchLikeTheAWSCLI(t *testing.T) {
	tests := []struct {
		rules Rules
		name  string
		want  bool
	}{
		{nil, "a/b.txt", true},
		{Rules{{false, "*"}}, "a/b.txt", false},
		{Rules{{false, "*"}, {true, "*.txt"}}, "a/b.txt", true},
		{Rules{{false, "*"}, {true, "*.txt"}}, "a/b.bin", false},
		{Rules{{true, "*.txt"}, {false, "*"}}, "a/b.txt", false},
		{Rules{{false, "a/*"}}, "a/b/c", false},
		{Rules{{false, "a/*"}}, "ab/c", true},
		{Rules{{false, "?.bin"}}, "x.bin", false},
		{Rules{{false, "?.bin"}}, "xy.bin", true},
		{Rules{{false, "[ab].bin"}}, "b.bin", false},
		{Rules{{false, "[!ab].bin"}}, "b.bin", true},
	}
	for _, tt := range tests {
		if got := tt.rules.Match(tt.name); got != tt.want {
			t.Errorf("%v.Match(%q) = %v, want %v", tt.rules, tt.name, got, tt.want)
		}
	}
}

func TestBackoffIsCappedAndJittered(t *testing.T) {
	b := Backoff{Base: 10 * time.Millisecond, Cap: 80 * time.Millisecond, MaxAttempts: 10}
	for retry := 1; retry < 40; retry++ {
		for range 20 {
			if d := b.Delay(retry); d < 0 || d > b.Cap {
				t.Fatalf("Delay(%d) = %s, want within [0, %s]", retry, d, b.Cap)
			}
		}
	}
}

func TestLatencyQuantiles(t *testing.T) {
	var h latencyBuckets
	for i := 1; i <= 100; i++ {
		h.add(time.Duration(i) * time.Millisecond)
	}
	p50, p99 := h.quantile(0.5), h.quantile(0.99)
	if p50 < 45*time.Millisecond || p50 > 58*time.Millisecond {
		t.Errorf("p50 %s, want about 50ms", p50)
	}
	if p99 < 95*time.Millisecond || p99 > 115*time.Millisecond {
		t.Errorf("p99 %s, want about 99ms", p99)
	}
}

func TestRetriableClassification(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{errSlowDown, true},
		{errDenied, false},
		{fmt.Errorf("wrapped: %w", errDenied), false},
		{&behaviourError{msg: "retry me", retry: true}, true},
		{&ShortBodyError{Got: 1, Want: 2}, true},
		{&BadResponseError{Msg: "wrong range"}, true},
		{fmt.Errorf("stall: %w", errStalled), true},
		{fmt.Errorf("dial: %w", syscall.ECONNRESET), true},
		{fmt.Errorf("write: %w", syscall.ENOSPC), false},
		{&tls.CertificateVerificationError{Err: errors.New("unknown authority")}, false},
		{nil, false},
		{fmt.Errorf("wrapped: %w", io.ErrUnexpectedEOF), true},
		{context.Canceled, false},
		{Permanent(io.ErrUnexpectedEOF), false},
		{errors.New(strings.Repeat("x", 3)), false},
	}
	for _, tt := range tests {
		if got := Retriable(tt.err); got != tt.want {
			t.Errorf("Retriable(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

// cancellingSink cancels the run at its first Create and counts Creates.
// The first Create counts and cancels under mu, so no other Create is
// counted before the cancellation took effect: were the first one's
// goroutine descheduled between the two, as on a loaded machine, another
// worker would go on creating objects that were not started after it.
type cancellingSink struct {
	*memSink
	cancel  context.CancelFunc
	mu      sync.Mutex
	creates atomic.Int32
}

func (s *cancellingSink) Create(ctx context.Context, o Object) (File, error) {
	s.mu.Lock()
	if s.creates.Add(1) == 1 {
		s.cancel()
	}
	s.mu.Unlock()
	return s.memSink.Create(ctx, o)
}

func TestInterruptedRunLeavesQueuedObjectsAlone(t *testing.T) {
	sizes := map[string]int64{}
	for i := range 200 {
		sizes[fmt.Sprintf("k%03d", i)] = 10
	}
	ctx, cancel := context.WithCancel(context.Background())
	sink := &cancellingSink{memSink: newMemSink(), cancel: cancel}
	e, err := New([]Lane{{Name: "a", Source: newMemSource(sizes)}}, sink, Options{Workers: 2, QueueSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Run(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v, want context.Canceled", err)
	}
	if n := sink.creates.Load(); n > 4 {
		t.Fatalf("%d objects were started after the interruption, want at most the workers' few", n)
	}
}

// slowSource answers every request after a delay, so that ranges pile
// up at the request gate.
type slowSource struct{ *memSource }

func (s slowSource) Open(ctx context.Context, o *Object, off, n int64) (*Body, error) {
	time.Sleep(2 * time.Millisecond) // the server's latency injected, not a wait
	return s.memSource.Open(ctx, o, off, n)
}

// TestEngineBuffersOnlyRequestsInFlight: a range holds a copy buffer
// only while it holds a request slot, and buffers are kept across
// requests, whatever the collector does: a run makes no more buffers than
// requests in flight. Before buffers were taken at the gate, every range
// started held one (about 60 here); with a sync.Pool, a collection
// dropped them and the run made more.
func TestEngineBuffersOnlyRequestsInFlight(t *testing.T) {
	const objects, parts = 8, 8
	sizes := map[string]int64{}
	for i := range objects {
		sizes[fmt.Sprint("k", i)] = parts * 1000
	}
	src := slowSource{newMemSource(sizes)}
	const maxRequests = 4
	e, err := New([]Lane{{Name: "a", Source: src}}, newMemSink(), Options{Workers: 4, Threads: 8, MaxRequests: maxRequests, PartSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var made atomic.Int64
	newBuf := e.bufs.small.make
	e.bufs.small.make = func() []byte { made.Add(1); return newBuf() }
	stop := make(chan struct{})
	defer close(stop)
	go func() { // collections while the run goes: they must not matter
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
				runtime.GC()
			}
		}
	}()
	sum, err := e.Run(context.Background())
	if err != nil || sum.Objects != objects {
		t.Fatalf("run: %+v, %v", sum, err)
	}
	if made.Load() > maxRequests {
		t.Errorf("%d buffers made for %d requests in flight, want at most %d", made.Load(), maxRequests, maxRequests)
	}
}

// TestDefaultBufferSharesAFixedMemory: the copy buffers of a run hold at
// most 16 MiB by default, each between 32 and 128 KiB.
func TestDefaultBufferSharesAFixedMemory(t *testing.T) {
	for budget, want := range map[int]int{1: 128 << 10, 16: 128 << 10, 128: 128 << 10, 256: 64 << 10, 512: 32 << 10, 4096: 32 << 10} {
		if got := (Options{MaxRequests: budget}).WithDefaults().BufferSize; got != want {
			t.Errorf("budget %d: buffer %d KiB, want %d KiB", budget, got>>10, want>>10)
		}
	}
	if got := (Options{MaxRequests: 256, BufferSize: 1 << 20}).WithDefaults().BufferSize; got != 1<<20 {
		t.Errorf("a buffer size set was changed to %d", got)
	}
}
