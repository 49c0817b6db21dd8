package s3emu

import (
	"context"
	"net"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
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

// setPacingRate sets SO_MAX_PACING_RATE on c, a TCP connection.
func setPacingRate(c net.Conn, rate uint64) error {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return nil
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	err = raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptUint64(int(fd), unix.SOL_SOCKET, unix.SO_MAX_PACING_RATE, rate)
		if serr != nil && rate < 1<<32 {
			// Kernels before 4.x take a 32-bit value only.
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_MAX_PACING_RATE, int(rate))
		}
	})
	if err != nil {
		return err
	}
	return serr
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
