package sink

import (
	"bytes"
	"sync"
	"testing"

	"github.com/s3pd/s3pd/pkg/transfer"
	"github.com/s3pd/s3pd/pkg/transfer/transfertest"
)

// streamTarget is a stream destination: a buffer standing for stdout.
type streamTarget struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *streamTarget) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *streamTarget) Sink(testing.TB) transfer.Sink { return NewOrdered(s, 64<<10) }

func (s *streamTarget) Read(testing.TB, string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.buf.Bytes()), true
}

func (s *streamTarget) Names(testing.TB) []string { return nil }

func TestOrderedContract(t *testing.T) {
	transfertest.TestSink(t, transfertest.SinkSuite{
		NewTarget: func(*testing.T) transfertest.Target { return &streamTarget{} },
		Stream:    true,
	})
}

// discardTarget keeps nothing.
type discardTarget struct{}

func (discardTarget) Sink(testing.TB) transfer.Sink          { return Discard{} }
func (discardTarget) Read(testing.TB, string) ([]byte, bool) { return nil, false }
func (discardTarget) Names(testing.TB) []string              { return nil }

func TestDiscardContract(t *testing.T) {
	transfertest.TestSink(t, transfertest.SinkSuite{
		NewTarget: func(*testing.T) transfertest.Target { return discardTarget{} },
		Discards:  true,
	})
}
