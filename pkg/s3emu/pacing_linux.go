package s3emu

import (
	"net"
	"time"

	"golang.org/x/sys/unix"
)

// setPacingRate sets SO_MAX_PACING_RATE on c, a TCP connection, and
// shrinks its send buffer to about paceBuffer of traffic at that rate: a
// handler then returns when its response is nearly delivered, as S3's
// does, not when the whole body sits in a buffer of up to 4 MiB (which
// would count a GET of a 4 MiB object as in flight for the 30 ms of its
// first byte only, and let a client hold three times the requests
// Throttle.MaxInFlight allows).
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
		if serr == nil {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF, sendBuffer(rate))
		}
	})
	if err != nil {
		return err
	}
	return serr
}

// paceBuffer is how much traffic a paced connection's send buffer holds.
const paceBuffer = 20 * time.Millisecond

// sendBuffer is the SO_SNDBUF for a connection paced at rate bytes/s:
// paceBuffer of traffic, at least 64 KiB. (The kernel doubles the value
// for its bookkeeping.)
func sendBuffer(rate uint64) int {
	return int(max(64<<10, rate*uint64(paceBuffer)/uint64(time.Second)))
}
