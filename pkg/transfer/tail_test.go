package transfer

import (
	"bytes"
	"context"
	"fmt"
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
	time.Sleep(b.pause) // the slow body injected, not a wait
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

// requested returns the ranges asked of mem for key, by offset.
func requested(mem *memSource, key string) map[int64]int64 {
	got := map[int64]int64{}
	mem.ranges.Range(func(k, _ any) bool {
		var name string
		var off, n int64
		fmt.Sscan(k.(string), &name, &off, &n)
		if name == key {
			got[off] = n
		}
		return true
	})
	return got
}

// alignedFile is a countFile whose writes are best aligned to align.
type alignedFile struct {
	*countFile
	align int64
}

func (f alignedFile) Align() int64 { return f.align }

type alignedSink struct {
	*countSink
	align int64
}

func (s alignedSink) Create(ctx context.Context, o Object) (File, error) {
	f, err := s.countSink.Create(ctx, o)
	if err != nil {
		return nil, err
	}
	return alignedFile{f.(*countFile), s.align}, nil
}

// TestTailIsPlannedNotCut: an object of a few parts under a budget of
// 16. What is left when the last wave is planned goes out in pieces of
// at least tailPiece sized to the free slots, on boundaries that are
// multiples of the file's alignment: the requests tile the object, one
// per planned range (no range in flight is cut, so no byte is asked
// for twice), every byte is written once and the object's checksum,
// joined from the pieces, verifies.
func TestTailIsPlannedNotCut(t *testing.T) {
	const part, size = 4 << 20, 10<<20 + 12345
	for _, align := range []int64{0, 64 << 10} {
		t.Run(fmt.Sprint("align ", align), func(t *testing.T) {
			mem := newMemSource(map[string]int64{"k": size})
			crc := checksum.Start(checksum.CRC64NVME)
			crc.Update(mem.data["k"])
			mem.objs[0].Checksums = map[string]string{"CRC64NVME": checksum.Encode(checksum.CRC64NVME, crc.Sum())}
			src := &pausedSource{memSource: mem, pause: time.Millisecond}
			cs := &countSink{memSink: newMemSink(), files: map[string]*countFile{}}
			var sink Sink = cs
			if align > 0 {
				sink = alignedSink{cs, align}
			}
			obs := &doneObserver{}
			sum := runEngine(t, src, sink, Options{PartSize: part, MaxRequests: 16, Adaptive: AdaptiveOff, Observer: obs})
			if sum.Objects != 1 || sum.Failed != 0 || !bytes.Equal(cs.committed["k"], mem.data["k"]) {
				t.Fatalf("summary %+v; content equal %v", sum, bytes.Equal(cs.committed["k"], mem.data["k"]))
			}
			if sum.Hedged != 0 || sum.Retries != 0 || sum.Requests != sum.Ranges || sum.Overfetch != 0 {
				t.Errorf("%d requests for %d ranges (%d hedged, %d retries), overfetch %d: want one request per range and nothing dropped",
					sum.Requests, sum.Ranges, sum.Hedged, sum.Retries, sum.Overfetch)
			}
			got := requested(mem, "k")
			if int64(len(got)) != sum.Ranges || sum.Splits == 0 || sum.Ranges <= size/part {
				t.Errorf("%d ranges asked, %d in the summary, %d tail pieces: want more than the %d parts", len(got), sum.Ranges, sum.Splits, size/part+1)
			}
			boundary := max(align, tailAlign)
			for off := int64(0); off < size; {
				n, ok := got[off]
				if !ok {
					t.Fatalf("no range asked at %d (asked %v): the ranges do not tile the object", off, got)
				}
				if off+n < size && ((off+n)%boundary != 0 || n < tailPiece) {
					t.Errorf("range %d+%d: want at least %d bytes, ending on a multiple of %d", off, n, tailPiece, boundary)
				}
				off += n
			}
			for i, n := range cs.files["k"].writes {
				if n != 1 {
					t.Fatalf("byte %d written %d times, want once", i, n)
				}
			}
			if v := obs.results[0].Verification; len(v.Checksums) != 1 || v.Checksums[0] != "crc64nvme" {
				t.Errorf("verification %+v, want crc64nvme checked", v)
			}
		})
	}
}

// TestNoTailPiecesWhereRangesAreHeldBack: a per-object cap or a
// bandwidth cap keeps the planned parts (an order window and a part
// writer do too, see splittable).
func TestNoTailPiecesWhereRangesAreHeldBack(t *testing.T) {
	const part, size = 4 << 20, 12 << 20
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"per-object cap", Options{Threads: 3}},
		{"bandwidth cap", Options{Limiter: NewRateLimiter(1 << 40)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := newMemSource(map[string]int64{"k": size})
			m := newMemSink()
			opts := tc.opts
			opts.PartSize, opts.MaxRequests = part, 16
			sum := runEngine(t, mem, m, opts)
			if sum.Objects != 1 || !bytes.Equal(m.committed["k"], mem.data["k"]) {
				t.Fatalf("summary %+v", sum)
			}
			if sum.Splits != 0 || len(requested(mem, "k")) != size/part {
				t.Errorf("%d tail pieces, %d ranges: want the %d parts", sum.Splits, len(requested(mem, "k")), size/part)
			}
		})
	}
}
