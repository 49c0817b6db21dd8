package transfertest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"testing"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// SourceSuite describes a source for TestSource.
type SourceSuite struct {
	// New returns a source that lists exactly objects (name: content),
	// under those names.
	New func(t *testing.T, objects map[string][]byte) transfer.Source
	// Dataless says the source's bodies carry a reference, not the bytes
	// (a server-side copy): they must be transfer.Dataless, and only
	// what they declare is checked.
	Dataless bool
}

// TestSource runs the contract every Source keeps:
//   - List emits every object once, with its name and size, and stops
//     with emit's error as soon as emit fails (it streams);
//   - Open returns exactly the bytes asked for, declared in Off, Len and
//     Size, for any range and for the whole object (n < 0);
//   - Open of an object that is not there fails, and not as retriable.
func TestSource(t *testing.T, s SourceSuite) {
	objects := map[string][]byte{"a": Data("a", 1), "b/c": Data("b/c", 100_000), "b/d e+f": Data("b/d e+f", 777), "empty": nil}
	src := s.New(t, objects)
	ctx := context.Background()
	listed := map[string]transfer.Object{}
	t.Run("ListEmitsEveryObjectOnce", func(t *testing.T) {
		err := src.List(ctx, func(o transfer.Object) error {
			if _, dup := listed[o.Name]; dup {
				t.Errorf("%s listed twice", o.Name)
			}
			listed[o.Name] = o
			return nil
		})
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		var names []string
		for n, o := range listed {
			names = append(names, n)
			if want := int64(len(objects[n])); o.Size != want {
				t.Errorf("%s listed with size %d, want %d", n, o.Size, want)
			}
		}
		slices.Sort(names)
		if want := []string{"a", "b/c", "b/d e+f", "empty"}; !slices.Equal(names, want) {
			t.Fatalf("listed %q, want %q", names, want)
		}
	})
	t.Run("ListStopsAtEmitsError", func(t *testing.T) {
		stop := errors.New("stop")
		calls := 0
		err := src.List(ctx, func(transfer.Object) error { calls++; return stop })
		if !errors.Is(err, stop) || calls != 1 {
			t.Fatalf("List: %d calls, error %v; want 1 call and the emit's error", calls, err)
		}
	})
	t.Run("OpenReturnsExactlyTheBytesAsked", func(t *testing.T) {
		o, ok := listed["b/c"]
		if !ok {
			t.Skip("the listing failed")
		}
		data := objects["b/c"]
		size := int64(len(data))
		for _, r := range [][2]int64{{0, 1}, {0, 4096}, {12345, 50_000}, {size - 1, 1}, {size - 777, 777}, {0, -1}} {
			off, n := r[0], r[1]
			want := n
			if n < 0 {
				want = size - off
			}
			b, err := src.Open(ctx, &o, off, n)
			if err != nil {
				t.Fatalf("Open %d+%d: %v", off, n, err)
			}
			if b.Off != off || b.Len != want || b.Size != size {
				t.Errorf("Open %d+%d: body declares %d+%d of %d, want %d+%d of %d", off, n, b.Off, b.Len, b.Size, off, want, size)
			}
			if s.Dataless {
				if _, ok := b.ReadCloser.(transfer.Dataless); !ok {
					t.Errorf("Open %d+%d: body %T is not Dataless", off, n, b.ReadCloser)
				}
				b.Close()
				continue
			}
			got, err := io.ReadAll(b)
			b.Close()
			if err != nil || !bytes.Equal(got, data[off:off+want]) {
				t.Errorf("Open %d+%d: read %d bytes (%v) that differ from the %d asked", off, n, len(got), err, want)
			}
		}
	})
	t.Run("OpenEmptyObject", func(t *testing.T) {
		o, ok := listed["empty"]
		if !ok {
			t.Skip("the listing failed")
		}
		b, err := src.Open(ctx, &o, 0, -1)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		defer b.Close()
		if b.Len != 0 || b.Size != 0 {
			t.Errorf("body declares %d bytes of %d, want 0 of 0", b.Len, b.Size)
		}
	})
	t.Run("OpenMissingFails", func(t *testing.T) {
		if s.Dataless {
			t.Skip("a reference is checked where it is used")
		}
		o := transfer.Object{Key: "missing", Name: "missing", Size: 10}
		if k, ok := listed["a"]; ok {
			o.Key = k.Key + ".missing"
		}
		b, err := src.Open(ctx, &o, 0, -1)
		if err == nil {
			b.Close()
			t.Fatalf("Open of a missing object: no error")
		}
		if transfer.Retriable(err) {
			t.Errorf("Open of a missing object: %v is retriable", err)
		}
	})
}
