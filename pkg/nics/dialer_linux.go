package nics

import (
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// DialerOptions tune the dialer NewDialer builds.
type DialerOptions struct {
	// Timeout bounds one connection attempt; default 10 s.
	Timeout time.Duration
	// KeepAlive is the TCP keep-alive period; default 30 s.
	KeepAlive time.Duration
	// NoBindToDevice skips SO_BINDTODEVICE and binds the source address only.
	NoBindToDevice bool
}

// NewDialer returns a dialer whose connections leave through iface. Every
// socket is bound to the interface's source address (LocalAddr: the first
// IPv4 address, else the first global IPv6 address), and with
// SO_BINDTODEVICE to the interface itself where the process may (Linux
// before 5.7 requires CAP_NET_RAW); where it may not, the source address
// alone steers the packets, which needs a policy rule for that address (see
// Discover). Because LocalAddr has one family, the dialer reaches only
// endpoints of that family; SpreadDialer skips the others.
func NewDialer(iface Interface, opts DialerOptions) *net.Dialer {
	if opts.Timeout == 0 {
		opts.Timeout = 10 * time.Second
	}
	if opts.KeepAlive == 0 {
		opts.KeepAlive = 30 * time.Second
	}
	d := &net.Dialer{Timeout: opts.Timeout, KeepAlive: opts.KeepAlive}
	if src, ok := iface.SourceAddr(); ok {
		d.LocalAddr = &net.TCPAddr{IP: src.AsSlice(), Zone: src.Zone()}
	}
	if !opts.NoBindToDevice {
		d.Control = bindToDevice(iface.Name)
	}
	return d
}

// bindToDevice returns a net.Dialer Control function that sets
// SO_BINDTODEVICE, ignoring a refusal for lack of privilege.
func bindToDevice(name string) func(network, address string, c syscall.RawConn) error {
	return func(network, address string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) { serr = unix.BindToDevice(int(fd), name) }); err != nil {
			return fmt.Errorf("bind socket to %s: %w", name, err)
		}
		if serr != nil && !errors.Is(serr, unix.EPERM) && !errors.Is(serr, unix.EACCES) {
			return fmt.Errorf("bind socket to %s: %w", name, serr)
		}
		return nil
	}
}

// BindToDevicePermitted reports whether this process may bind a socket to an
// interface with SO_BINDTODEVICE (so NewDialer's sockets are bound by device,
// not only by source address).
func BindToDevicePermitted() bool {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	return unix.BindToDevice(fd, "lo") == nil
}
