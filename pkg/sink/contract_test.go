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

// TestOrderedContract: an Ordered file is a transfer.Stream, which the
// suite finds: the clauses that take bytes back or look for them later
// skip themselves. The buffer holds no names (no Inventory).
func TestOrderedContract(t *testing.T) {
	(&transfertest.SinkSuite{
		NewTarget: func(*testing.T) transfertest.Target { return &streamTarget{} },
	}).Run(t)
}

// discardTarget keeps nothing: it is no transfertest.Reader, so only
// what every File does is checked.
type discardTarget struct{}

func (discardTarget) Sink(testing.TB) transfer.Sink { return Discard{} }

func TestDiscardContract(t *testing.T) {
	(&transfertest.SinkSuite{
		NewTarget: func(*testing.T) transfertest.Target { return discardTarget{} },
	}).Run(t)
}
