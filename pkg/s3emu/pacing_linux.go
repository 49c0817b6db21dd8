package s3emu

import (
	"net"

	"golang.org/x/sys/unix"
)

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
