package transfer

import (
	"context"
	"io"
	"testing"
	"time"
)

// pacedSource serves like memSource but each body delivers at most
// bytesPerSec, like a network card with a cap.
type pacedSource struct {
	*memSource
	bytesPerSec float64
}

type pacedReader struct {
	r     io.Reader
	rate  float64
	start time.Time
	n     int64
}

func (p *pacedReader) Read(b []byte) (int, error) {
	if len(b) > 4096 {
		b = b[:4096]
	}
	k, err := p.r.Read(b)
	p.n += int64(k)
	if due := time.Duration(float64(p.n) / p.rate * float64(time.Second)); due > time.Since(p.start) {
		time.Sleep(due - time.Since(p.start)) // the link's rate injected, not a wait
	}
	return k, err
}

func (s pacedSource) Open(ctx context.Context, o *Object, off, n int64) (*Body, error) {
	b, err := s.memSource.Open(ctx, o, off, n)
	if err != nil {
		return nil, err
	}
	b.ReadCloser = io.NopCloser(&pacedReader{r: b.ReadCloser, rate: s.bytesPerSec, start: time.Now()})
	return b, nil
}

func TestLanesBalanceByOutstandingBytes(t *testing.T) {
	sizes := map[string]int64{}
	for _, k := range []string{"a", "b", "c", "d"} {
		sizes[k] = 2 << 20
	}
	src := newMemSource(sizes)
	fast := pacedSource{src, 8 << 20} // per connection
	slow := pacedSource{src, 1 << 20}
	e, err := New([]Lane{{Name: "fast", Source: fast}, {Name: "slow", Source: slow}}, newMemSink(),
		Options{PartSize: 64 << 10, Workers: 4, Threads: 2, BufferSize: 16 << 10})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := e.Run(context.Background())
	if err != nil || sum.Failed != 0 {
		t.Fatalf("run: %v, %+v", err, sum)
	}
	var fastBytes, slowBytes int64
	for _, l := range sum.Lanes {
		switch l.Name {
		case "fast":
			fastBytes = l.Bytes
		case "slow":
			slowBytes = l.Bytes
		}
	}
	if fastBytes+slowBytes != 8<<20 {
		t.Fatalf("lanes carried %d bytes, want %d", fastBytes+slowBytes, 8<<20)
	}
	// Blind round-robin would give each lane half; balancing by
	// outstanding bytes sends most to the lane that drains faster.
	if share := float64(fastBytes) / float64(8<<20); share < 0.7 {
		t.Fatalf("fast lane share %.2f, want at least 0.70 (fast %d, slow %d bytes)", share, fastBytes, slowBytes)
	}
}
