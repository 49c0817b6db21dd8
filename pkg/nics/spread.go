package nics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Resolver looks up the addresses of a host; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// SpreadDialer spreads connections to a host name over every address the
// name resolves to (all A and AAAA records), rotating round-robin on each
// dial and resolving again once the answer is older than the refresh period,
// as the AWS Common Runtime does: one S3 front-end address is itself a
// bottleneck at high throughput. When an address refuses a connection the
// next one is tried. Dials to an IP literal go straight to the base dialer.
type SpreadDialer struct {
	base     *net.Dialer
	refresh  time.Duration
	resolver Resolver
	now      func() time.Time

	mu    sync.Mutex
	hosts map[string]*hostAddrs
}

// hostAddrs is the cached answer for one host name.
type hostAddrs struct {
	addrs   []netip.Addr // sorted, so rotation survives a re-resolve
	expires time.Time
	next    atomic.Uint64
	// lookup is non-nil while one dial resolves the name; closed when done.
	lookup chan struct{}
}

// NewSpreadDialer returns a SpreadDialer that connects with base and
// resolves with resolver (net.DefaultResolver when nil) every refresh
// (30 s when zero).
func NewSpreadDialer(base *net.Dialer, refresh time.Duration, resolver Resolver) *SpreadDialer {
	if base == nil {
		base = &net.Dialer{}
	}
	if refresh <= 0 {
		refresh = 30 * time.Second
	}
	if resolver == nil {
		resolver = net.DefaultResolver
	}
	return &SpreadDialer{base: base, refresh: refresh, resolver: resolver, now: time.Now,
		hosts: map[string]*hostAddrs{}}
}

// DialContext connects to addr ("host:port") on network ("tcp", "tcp4" or
// "tcp6"); it has the signature of http.Transport.DialContext.
func (d *SpreadDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	if _, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")); err == nil {
		return d.base.DialContext(ctx, network, addr)
	}
	e, all, err := d.resolve(ctx, host)
	if err != nil {
		return nil, err
	}
	ips := d.usable(network, all)
	if len(ips) == 0 {
		return nil, fmt.Errorf("dial %s %s: none of %v suits the network and the local address", network, addr, all)
	}
	start := e.next.Add(1) - 1
	var errs []error
	for k := range ips {
		ip := ips[(start+uint64(k))%uint64(len(ips))]
		c, err := d.base.DialContext(ctx, network, net.JoinHostPort(ip.String(), port))
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("dial %s (%d addresses): %w", addr, len(ips), errors.Join(errs...))
}

// Addrs returns the addresses last resolved for host, in rotation order.
func (d *SpreadDialer) Addrs(host string) []netip.Addr {
	d.mu.Lock()
	defer d.mu.Unlock()
	if e := d.hosts[host]; e != nil {
		return slices.Clone(e.addrs)
	}
	return nil
}

// usable keeps the addresses the network and the base dialer's local
// address can reach.
func (d *SpreadDialer) usable(network string, all []netip.Addr) []netip.Addr {
	want4, want6 := network != "tcp6", network != "tcp4"
	if la, ok := d.base.LocalAddr.(*net.TCPAddr); ok && la != nil && la.IP != nil {
		if la.IP.To4() != nil {
			want6 = false
		} else {
			want4 = false
		}
	}
	out := make([]netip.Addr, 0, len(all))
	for _, a := range all {
		if (a.Is4() && want4) || (a.Is6() && want6) {
			out = append(out, a)
		}
	}
	return out
}

// resolve returns the host's cached addresses, resolving them when there are
// none or they are older than the refresh period. While one dial resolves a
// stale name the others keep using the old answer; a failed refresh keeps it.
func (d *SpreadDialer) resolve(ctx context.Context, host string) (*hostAddrs, []netip.Addr, error) {
	for {
		d.mu.Lock()
		e := d.hosts[host]
		if e == nil {
			e = &hostAddrs{}
			d.hosts[host] = e
		}
		fresh := len(e.addrs) > 0 && d.now().Before(e.expires)
		if fresh || (len(e.addrs) > 0 && e.lookup != nil) {
			addrs := e.addrs
			d.mu.Unlock()
			return e, addrs, nil
		}
		if wait := e.lookup; wait != nil {
			d.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, nil, fmt.Errorf("resolve %s: %w", host, ctx.Err())
			}
		}
		done := make(chan struct{})
		e.lookup = done
		d.mu.Unlock()

		got, err := d.resolver.LookupNetIP(ctx, "ip", host)
		addrs := normalize(got)

		d.mu.Lock()
		e.lookup = nil
		close(done)
		if err == nil && len(addrs) > 0 {
			e.addrs = addrs
		}
		old := e.addrs
		if len(old) > 0 {
			e.expires = d.now().Add(d.refresh)
		}
		d.mu.Unlock()
		if len(old) == 0 {
			if err == nil {
				err = errors.New("no addresses")
			}
			return nil, nil, fmt.Errorf("resolve %s: %w", host, err)
		}
		return e, old, nil
	}
}

// normalize unmaps, sorts and de-duplicates addresses.
func normalize(in []netip.Addr) []netip.Addr {
	out := make([]netip.Addr, 0, len(in))
	for _, a := range in {
		out = append(out, a.Unmap())
	}
	slices.SortFunc(out, func(a, b netip.Addr) int { return a.Compare(b) })
	return slices.Compact(out)
}
