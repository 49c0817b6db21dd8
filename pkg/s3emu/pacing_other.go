//go:build !linux

package s3emu

import (
	"errors"
	"net"
)

// setPacingRate needs Linux's SO_MAX_PACING_RATE; elsewhere a rate cap
// is refused rather than ignored.
func setPacingRate(net.Conn, uint64) error {
	return errors.New("per-connection rate caps need Linux (SO_MAX_PACING_RATE)")
}
