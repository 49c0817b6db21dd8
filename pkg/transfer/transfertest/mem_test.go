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

func TestSinkContract(t *testing.T) {
	same := func(s *transfertest.Sink) transfer.Sink { return s }
	for _, tc := range []struct {
		name  string
		new   func() *transfertest.Sink
		sink  func(*transfertest.Sink) transfer.Sink
		skips bool
	}{
		{"plain", transfertest.NewSink, same, false},
		{"journal", func() *transfertest.Sink { s := transfertest.NewSink(); s.Journal = true; return s }, same, false},
		{"parts", func() *transfertest.Sink { s := transfertest.NewSink(); s.Parts = true; return s }, same, false},
		{"checker", transfertest.NewSink, func(s *transfertest.Sink) transfer.Sink { return transfertest.CheckSink{Sink: s} }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			transfertest.TestSink(t, transfertest.SinkSuite{
				PartSize:   1000,
				NeverSkips: !tc.skips,
				NewTarget:  func(*testing.T) transfertest.Target { return memTarget{s: tc.new(), sink: tc.sink} },
			})
		})
	}
}

func TestSourceContract(t *testing.T) {
	newSource := func(objects map[string][]byte) *transfertest.Source {
		src := transfertest.NewSource()
		for name, data := range objects {
			src.Add(name, data)
		}
		return src
	}
	transfertest.TestSource(t, transfertest.SourceSuite{
		New: func(_ *testing.T, objects map[string][]byte) transfer.Source { return newSource(objects) },
	})
	t.Run("references", func(t *testing.T) {
		transfertest.TestSource(t, transfertest.SourceSuite{
			New: func(_ *testing.T, objects map[string][]byte) transfer.Source {
				return transfertest.RefSource{Source: newSource(objects)}
			},
			Dataless: true,
		})
	})
}
