package s3emu

import (
	"context"
	"net"
	"sync/atomic"
	"time"
)

// pacedListener caps every accepted TCP connection at rate bytes/s with
// SO_MAX_PACING_RATE: the kernel paces the socket itself, so a connection
// behaves like one to S3 (about 90 MB/s) with no qdisc (netem and fq are
// not available on every kernel).
type pacedListener struct {
	net.Listener
	rate     uint64
	failures *atomic.Int64
}

func (l *pacedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if err := setPacingRate(c, l.rate); err != nil {
		l.failures.Add(1)
	}
	return c, nil
}

// sleepCtx sleeps for d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
