package transfer

import (
	"bytes"
	"context"
	"errors"
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
// object's first range already open: those bytes are not asked of the
// source again, whatever first range the engine plans (the probe's
// length, a whole object between the part size and the threshold, a
// part raised so that the object has at most MaxParts parts, or one
// shorter than what is held), every other range is asked once, and the
// bytes arrive whole. Served or not, the held body is closed once.
func TestPrefetchServesItsRangeOnce(t *testing.T) {
	const part = 1000
	for _, tt := range []struct {
		name      string
		size      int64
		partSize  int64
		threshold int64
		held      int64 // the held range's length
		want      []string
	}{
		{"first part of a ranged object", 3500, part, part, part, []string{"1000+1000", "2000+1000", "3000+500"}},
		{"a small object whole", 700, part, part, part, nil},
		{"a whole object longer than the range: the rest once", 1500, part, 2000, part, []string{"1000+500"}},
		{"a shorter range held: the rest of the first part", 3500, part, part, 400, []string{"400+600", "1000+1000", "2000+1000", "3000+500"}},
		{"a longer range held: its prefix", 3500, part, part, 1500, []string{"1000+1000", "2000+1000", "3000+500"}},
		{"more than MaxParts parts: the rest of the larger part", 2*MaxParts + 1, 1, 1, 1, nil},
		{"an empty object: never asked", 0, part, part, part, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := newRangeSource(tt.size)
			var closes atomic.Int32
			held := src.body(0, tt.held)
			held.ReadCloser = closeCount{Reader: held.ReadCloser, n: &closes}
			p := NewPrefetch("k", held)
			sink := &bytesSink{}
			e, err := New(p.Lanes([]Lane{{Name: "a", Source: src}}), sink, Options{Workers: 1, Threads: 1, PartSize: tt.partSize, Threshold: tt.threshold})
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
			want := tt.want
			if tt.size > MaxParts {
				// Parts of 3 bytes: the first asks its last 2.
				want = []string{"1+2"}
				for off := int64(3); off < tt.size; off += 3 {
					want = append(want, fmt.Sprint(off, "+", min(3, tt.size-off)))
				}
			}
			if fmt.Sprint(src.asks) != fmt.Sprint(want) {
				t.Errorf("asked the source for %.200v, want %.200v", src.asks, want)
			}
			if got := closes.Load(); got != 1 {
				t.Errorf("the held body was closed %d times, want once", got)
			}
		})
	}
}

// TestPrefetchRestOfAnotherObject: the rest of a held range, asked when
// its bytes run out, must be of the same object: another ETag fails the
// range as modified, a response of other bytes as a bad response.
func TestPrefetchRestOfAnotherObject(t *testing.T) {
	for _, tt := range []struct {
		name string
		edit func(*Body)
		want func(error) bool
	}{
		{"another etag", func(b *Body) { b.ETag = `"other"` }, func(err error) bool { return errors.Is(err, ErrModified) }},
		{"other bytes", func(b *Body) { b.Off++ }, func(err error) bool { var br *BadResponseError; return errors.As(err, &br) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := newRangeSource(1500)
			p := NewPrefetch("k", src.body(0, 1000))
			lane := p.Lanes([]Lane{{Source: editedSource{src, tt.edit}}})[0]
			b, err := lane.Source.Open(context.Background(), &src.obj, 0, -1)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			if b.Off != 0 || b.Len != 1500 {
				t.Fatalf("body of bytes %d+%d, want 0+1500", b.Off, b.Len)
			}
			_, err = io.Copy(io.Discard, b)
			if !tt.want(err) {
				t.Errorf("read: %v", err)
			}
		})
	}
}

// editedSource changes the bodies its source returns.
type editedSource struct {
	*rangeSource
	edit func(*Body)
}

func (s editedSource) Open(ctx context.Context, obj *Object, off, n int64) (*Body, error) {
	b, err := s.rangeSource.Open(ctx, obj, off, n)
	if err == nil {
		s.edit(b)
	}
	return b, err
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
