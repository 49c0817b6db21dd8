package transfertest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"maps"
	"slices"
	"testing"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// SourceSuite is the contract every Source keeps, one method per clause.
// A source whose bodies carry a reference, not the bytes (a server-side
// copy's, transfer.Dataless), is held to what its bodies declare.
type SourceSuite struct {
	// New returns a source that lists exactly objects (name: content),
	// under those names.
	New func(t *testing.T, objects map[string][]byte) transfer.Source
}

// Run runs every clause of the contract as a subtest of t.
func (s *SourceSuite) Run(t *testing.T) {
	t.Helper()
	runClauses(t, s)
}

// sourceObjects is what the suite's sources hold: a byte, a deeper name,
// a name with a space and a plus, and an empty object.
func sourceObjects() map[string][]byte {
	return map[string][]byte{"a": Data("a", 1), "b/c": Data("b/c", 100_000), "b/d e+f": Data("b/d e+f", 777), "empty": nil}
}

// TestListEmitsEveryObjectOnce: List emits every object once, with its
// name and size.
func (s *SourceSuite) TestListEmitsEveryObjectOnce(t *testing.T) {
	objects := sourceObjects()
	src := s.New(t, objects)
	seen := map[string]int{}
	err := src.List(context.Background(), func(o transfer.Object) error {
		if seen[o.Name]++; seen[o.Name] == 2 {
			t.Errorf("%s listed twice", o.Name)
		}
		if want := int64(len(objects[o.Name])); o.Size != want {
			t.Errorf("%s listed with size %d, want %d", o.Name, o.Size, want)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if names, want := slices.Sorted(maps.Keys(seen)), []string{"a", "b/c", "b/d e+f", "empty"}; !slices.Equal(names, want) {
		t.Fatalf("listed %q, want %q", names, want)
	}
}

// TestListStopsAtEmitsError: List streams: it stops, with emit's error,
// as soon as emit fails.
func (s *SourceSuite) TestListStopsAtEmitsError(t *testing.T) {
	src := s.New(t, sourceObjects())
	stop := errors.New("stop")
	calls := 0
	err := src.List(context.Background(), func(transfer.Object) error { calls++; return stop })
	if !errors.Is(err, stop) || calls != 1 {
		t.Fatalf("List: %d calls, error %v; want 1 call and the emit's error", calls, err)
	}
}

// TestOpenReturnsExactlyTheBytesAsked: Open returns exactly the bytes
// asked for, declared in Off, Len and Size, for any range and for the
// whole object (n < 0). A reference body (Dataless) is held to what it
// declares; a source's bodies are all references or none is.
func (s *SourceSuite) TestOpenReturnsExactlyTheBytesAsked(t *testing.T) {
	objects := sourceObjects()
	src := s.New(t, objects)
	o := listed(t, src)["b/c"]
	data := objects["b/c"]
	size := int64(len(data))
	refs := map[bool]int{}
	for _, r := range [][2]int64{{0, 1}, {0, 4096}, {12345, 50_000}, {size - 1, 1}, {size - 777, 777}, {0, -1}} {
		off, n := r[0], r[1]
		want := n
		if n < 0 {
			want = size - off
		}
		b, err := src.Open(context.Background(), &o, off, n)
		if err != nil {
			t.Fatalf("Open %d+%d: %v", off, n, err)
		}
		if b.Off != off || b.Len != want || b.Size != size {
			t.Errorf("Open %d+%d: body declares %d+%d of %d, want %d+%d of %d", off, n, b.Off, b.Len, b.Size, off, want, size)
		}
		_, ref := b.ReadCloser.(transfer.Dataless)
		refs[ref]++
		if !ref {
			got, err := io.ReadAll(b)
			if err != nil || !bytes.Equal(got, data[off:off+want]) {
				t.Errorf("Open %d+%d: read %d bytes (%v) that differ from the %d asked", off, n, len(got), err, want)
			}
		}
		b.Close()
	}
	if len(refs) > 1 {
		t.Errorf("%d bodies are references (Dataless) and %d carry bytes: a source's are all one or the other", refs[true], refs[false])
	}
}

// TestOpenEmptyObject: Open of an empty object declares no bytes of none.
func (s *SourceSuite) TestOpenEmptyObject(t *testing.T) {
	src := s.New(t, sourceObjects())
	o := listed(t, src)["empty"]
	b, err := src.Open(context.Background(), &o, 0, -1)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer b.Close()
	if b.Len != 0 || b.Size != 0 {
		t.Errorf("body declares %d bytes of %d, want 0 of 0", b.Len, b.Size)
	}
}

// TestOpenMissingFails: Open of an object that is not there fails, and
// not as retriable. A source of references is skipped: a reference is
// checked where it is used (by the sink that copies it).
func (s *SourceSuite) TestOpenMissingFails(t *testing.T) {
	src := s.New(t, sourceObjects())
	a := listed(t, src)["a"]
	b, err := src.Open(context.Background(), &a, 0, -1)
	if err != nil {
		t.Fatalf("Open %s: %v", a.Name, err)
	}
	b.Close()
	if _, ok := b.ReadCloser.(transfer.Dataless); ok {
		t.Skip("the source's bodies are references (Dataless): one is checked where it is used")
	}
	o := transfer.Object{Key: a.Key + ".missing", Name: "missing", Size: 10}
	b, err = src.Open(context.Background(), &o, 0, -1)
	if err == nil {
		b.Close()
		t.Fatalf("Open of a missing object: no error")
	}
	if transfer.Retriable(err) {
		t.Errorf("Open of a missing object: %v is retriable", err)
	}
}

// listed lists src by name; the test fails unless it lists every object
// of sourceObjects (TestListEmitsEveryObjectOnce says what is wrong).
func listed(t *testing.T, src transfer.Source) map[string]transfer.Object {
	t.Helper()
	objs := map[string]transfer.Object{}
	err := src.List(context.Background(), func(o transfer.Object) error {
		objs[o.Name] = o
		return nil
	})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	for name := range sourceObjects() {
		if _, ok := objs[name]; !ok {
			t.Fatalf("%s is not listed", name)
		}
	}
	return objs
}
