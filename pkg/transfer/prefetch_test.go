package transfer

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"
)

// rangeSource serves one object from memory and records the ranges it
// was asked for.
type rangeSource struct {
	obj  Object
	data []byte
	mu   sync.Mutex
	asks []string
}

func newRangeSource(size int64) *rangeSource {
	b := make([]byte, size)
	for i := range b {
		b[i] = byte(i * 31)
	}
	return &rangeSource{obj: Object{Key: "k", Name: "k", Size: size, ETag: `"e"`}, data: b}
}

func (s *rangeSource) List(_ context.Context, emit func(Object) error) error { return emit(s.obj) }

func (s *rangeSource) Open(_ context.Context, _ *Object, off, n int64) (*Body, error) {
	s.mu.Lock()
	s.asks = append(s.asks, fmt.Sprint(off, "+", n))
	s.mu.Unlock()
	return s.body(off, n), nil
}

func (s *rangeSource) body(off, n int64) *Body {
	if n < 0 {
		n = int64(len(s.data)) - off
	}
	n = min(n, int64(len(s.data))-off)
	return &Body{ReadCloser: io.NopCloser(bytes.NewReader(s.data[off : off+n])), Off: off, Len: n, Size: int64(len(s.data)), ETag: s.obj.ETag}
}

// closeCount counts the closes of a body.
type closeCount struct {
	io.Reader
	n *atomic.Int32
}

func (c closeCount) Close() error { c.n.Add(1); return nil }

// bytesSink keeps the one object it is given.
type bytesSink struct{ b []byte }

func (s *bytesSink) Create(_ context.Context, o Object) (File, error) {
	s.b = make([]byte, o.Size)
	return s, nil
}
func (s *bytesSink) WriteAt(p []byte, off int64) (int, error) { return copy(s.b[off:], p), nil }
func (s *bytesSink) Commit() error                            { return nil }
func (s *bytesSink) Abort() error                             { return nil }

// TestPrefetchServesItsRangeOnce runs the engine over lanes that hold the
// object's first range already open: that range is not asked of the
// source, every other one is, once, and the bytes arrive whole; a range
// of another length is asked for anew. Served or not, the held body is
// closed once.
func TestPrefetchServesItsRangeOnce(t *testing.T) {
	const part = 1000
	for _, tt := range []struct {
		name      string
		size      int64
		threshold int64
		held      int64 // the held range's length
		want      []string
	}{
		{"first part of a ranged object", 3500, part, part, []string{"1000+1000", "2000+1000", "3000+500"}},
		{"a small object whole", 700, part, part, nil},
		{"another length: asked anew", 3500, part, 400, []string{"0+1000", "1000+1000", "2000+1000", "3000+500"}},
		{"an empty object: never asked", 0, part, part, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := newRangeSource(tt.size)
			var closes atomic.Int32
			held := src.body(0, tt.held)
			held.ReadCloser = closeCount{Reader: held.ReadCloser, n: &closes}
			p := NewPrefetch("k", held)
			sink := &bytesSink{}
			e, err := New(p.Lanes([]Lane{{Name: "a", Source: src}}), sink, Options{Workers: 1, Threads: 1, PartSize: part, Threshold: tt.threshold})
			if err != nil {
				t.Fatal(err)
			}
			sum, err := e.Run(context.Background())
			if err != nil || sum.Objects != 1 {
				t.Fatalf("run: %d objects, %v; want 1", sum.Objects, err)
			}
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(sink.b, src.data) {
				t.Errorf("the object's bytes differ")
			}
			if fmt.Sprint(src.asks) != fmt.Sprint(tt.want) {
				t.Errorf("asked the source for %v, want %v", src.asks, tt.want)
			}
			if got := closes.Load(); got != 1 {
				t.Errorf("the held body was closed %d times, want once", got)
			}
		})
	}
}

// TestPrefetchKeepsChecksummer: a wrapped source that fetches checksums
// still does; one that does not, still does not.
func TestPrefetchKeepsChecksummer(t *testing.T) {
	p := NewPrefetch("k", nil)
	lanes := p.Lanes([]Lane{{Source: newRangeSource(1)}, {Source: sumSource{newRangeSource(1)}}})
	if _, ok := lanes[0].Source.(Checksummer); ok {
		t.Errorf("a source without checksums gained Checksummer")
	}
	cs, ok := lanes[1].Source.(Checksummer)
	if !ok {
		t.Fatalf("a Checksummer source lost Checksummer")
	}
	if m, _ := cs.Checksums(context.Background(), &Object{}); m["CRC32"] != "x" {
		t.Errorf("checksums %v, want the wrapped source's", m)
	}
}

type sumSource struct{ *rangeSource }

func (sumSource) Checksums(context.Context, *Object) (map[string]string, error) {
	return map[string]string{"CRC32": "x"}, nil
}
