package transfertest_test

import (
	"slices"
	"testing"

	"github.com/s3pd/s3pd/pkg/transfer"
	"github.com/s3pd/s3pd/pkg/transfer/transfertest"
)

// The in-memory adapters keep the contract they stand in for.

// memTarget is one in-memory destination; sink shapes its sinks.
type memTarget struct {
	s    *transfertest.Sink
	sink func(*transfertest.Sink) transfer.Sink
}

func (m memTarget) Sink(testing.TB) transfer.Sink { return m.sink(m.s) }

func (m memTarget) Read(_ testing.TB, name string) ([]byte, bool) {
	c, ok := m.s.Committed()[name]
	return c.Data, ok
}

func (m memTarget) Names(testing.TB) []string {
	var names []string
	for name := range m.s.Committed() {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// TestSinkContract runs the contract over each kind of in-memory file,
// each behind a CheckSink: the plain Sink never skips an object (the
// engine's tests rerun over it), and a sink that keeps objects skips
// those unchanged.
func TestSinkContract(t *testing.T) {
	for _, tc := range []struct {
		name string
		new  func() *transfertest.Sink
	}{
		{"plain", transfertest.NewSink},
		{"journal", func() *transfertest.Sink { s := transfertest.NewSink(); s.Journal = true; return s }},
		{"parts", func() *transfertest.Sink { s := transfertest.NewSink(); s.Parts = true; return s }},
		{"stages", func() *transfertest.Sink { s := transfertest.NewSink(); s.Stage = 4096; return s }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			(&transfertest.SinkSuite{
				PartSize: 1000,
				NewTarget: func(*testing.T) transfertest.Target {
					s := tc.new()
					return memTarget{s: s, sink: func(s *transfertest.Sink) transfer.Sink { return transfertest.CheckSink{Sink: s} }}
				},
			}).Run(t)
		})
	}
}

func newSource(objects map[string][]byte) *transfertest.Source {
	src := transfertest.NewSource()
	for name, data := range objects {
		src.Add(name, data)
	}
	return src
}

func TestSourceContract(t *testing.T) {
	(&transfertest.SourceSuite{
		New: func(_ *testing.T, objects map[string][]byte) transfer.Source { return newSource(objects) },
	}).Run(t)
}

func TestRefSourceContract(t *testing.T) {
	(&transfertest.SourceSuite{
		New: func(_ *testing.T, objects map[string][]byte) transfer.Source {
			return transfertest.RefSource{Source: newSource(objects)}
		},
	}).Run(t)
}

// TestRefSourceOpensReferences: every body a RefSource opens is a
// reference, whatever the range.
func TestRefSourceOpensReferences(t *testing.T) {
	src := transfertest.RefSource{Source: newSource(map[string][]byte{"k": transfertest.Data("k", 5000)})}
	o := src.Object("k")
	for _, r := range [][2]int64{{0, -1}, {0, 1}, {4000, 1000}} {
		b, err := src.Open(t.Context(), &o, r[0], r[1])
		if err != nil {
			t.Fatalf("Open %d+%d: %v", r[0], r[1], err)
		}
		if _, ok := b.ReadCloser.(transfer.Dataless); !ok {
			t.Errorf("Open %d+%d: body %T is not Dataless", r[0], r[1], b.ReadCloser)
		}
		b.Close()
	}
}
