package nics

import (
	"context"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"

	"github.com/s3pd/s3pd/internal/testenv"
)

func TestNewDialer(t *testing.T) {
	lns, port := listenSamePort(t, "127.0.0.2")
	acceptAll(t, lns)
	lo := Interface{Name: "lo", IPv4: []netip.Prefix{netip.MustParsePrefix("127.0.0.5/8")}}
	for _, opts := range []DialerOptions{{}, {NoBindToDevice: true}} {
		d := NewDialer(lo, opts)
		c, err := d.DialContext(context.Background(), "tcp", "127.0.0.2:"+port)
		if err != nil {
			t.Fatalf("dial with %+v: %v", opts, err)
		}
		if got := c.LocalAddr().(*net.TCPAddr).IP.String(); got != "127.0.0.5" {
			t.Errorf("local address with %+v: got %s, want 127.0.0.5", opts, got)
		}
		c.Close()
	}

	if os.Geteuid() != 0 || !BindToDevicePermitted() {
		testenv.Unavailable(t, "SO_BINDTODEVICE not permitted here (needs root or CAP_NET_RAW before Linux 5.7): binding by device not tested")
	}
	// Bound to a device that does not exist, the socket cannot be made.
	d := NewDialer(Interface{Name: "nosuch0", IPv4: lo.IPv4}, DialerOptions{})
	if _, err := d.DialContext(context.Background(), "tcp", "127.0.0.2:"+port); err == nil || !strings.Contains(err.Error(), "bind socket to nosuch0") {
		t.Errorf("dial bound to nosuch0: got %v, want a bind error", err)
	}
}
