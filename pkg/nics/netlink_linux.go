package nics

import (
	"context"
	"encoding/binary"
	"fmt"
	"net/netip"
	"syscall"

	"golang.org/x/sys/unix"
)

// Rule is one policy-routing rule (`ip rule`).
type Rule struct {
	Family   int // unix.AF_INET or unix.AF_INET6
	Priority int
	// Src is the "from" selector; the zero Prefix means "from all".
	Src netip.Prefix
	// Dst is the "to" selector; the zero Prefix means any destination.
	Dst    netip.Prefix
	Table  int
	Action int // unix.FR_ACT_*
	Invert bool
	IIf    string
	OIf    string
	Mark   uint32
	// SuppressPrefixLen skips a route the table returns whose prefix is this
	// long or shorter ("suppress_prefixlength 0" skips the default route);
	// -1 when not set.
	SuppressPrefixLen int
}

// Route is one route of any table (`ip route show table all`).
type Route struct {
	Family int
	Table  int
	Dst    netip.Prefix
	Type   int // unix.RTN_*
	Metric int
	// OIfs are the output interfaces' indexes (several for multipath).
	OIfs []int
}

// Routing is a snapshot of the policy rules and routes of one network
// namespace.
type Routing struct {
	Rules  []Rule
	Routes []Route
}

// RoutingReader reads the rules and routes. Netlink reads the calling
// thread's namespace; tests hand in fixed tables.
type RoutingReader interface {
	ReadRouting(ctx context.Context) (*Routing, error)
}

// Netlink reads routing rules and routes over an rtnetlink socket, the same
// source `ip rule` and `ip route show table all` use; it needs no privilege.
type Netlink struct{}

// ReadRouting dumps the rules and routes of every family and table.
func (Netlink) ReadRouting(ctx context.Context) (*Routing, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rules, err := dump(unix.RTM_GETRULE)
	if err != nil {
		return nil, fmt.Errorf("dump rules: %w", err)
	}
	routes, err := dump(unix.RTM_GETROUTE)
	if err != nil {
		return nil, fmt.Errorf("dump routes: %w", err)
	}
	rt := &Routing{}
	for _, m := range rules {
		if m.Header.Type == unix.RTM_NEWRULE {
			if r, ok := parseRule(m.Data); ok {
				rt.Rules = append(rt.Rules, r)
			}
		}
	}
	for _, m := range routes {
		if m.Header.Type == unix.RTM_NEWROUTE {
			if r, ok := parseRoute(m.Data); ok {
				rt.Routes = append(rt.Routes, r)
			}
		}
	}
	return rt, nil
}

// dump sends one rtnetlink dump request for every address family.
func dump(proto int) ([]syscall.NetlinkMessage, error) {
	b, err := syscall.NetlinkRIB(proto, unix.AF_UNSPEC)
	if err != nil {
		return nil, err
	}
	return syscall.ParseNetlinkMessage(b)
}

// attrs splits netlink attributes into a map by type.
func attrs(b []byte) map[uint16][]byte {
	out := map[uint16][]byte{}
	for len(b) >= 4 {
		l := int(binary.NativeEndian.Uint16(b[0:2]))
		typ := binary.NativeEndian.Uint16(b[2:4]) & 0x3fff // drop NLA_F_* flags
		if l < 4 || l > len(b) {
			break
		}
		out[typ] = b[4:l]
		b = b[min(align4(l), len(b)):]
	}
	return out
}

func align4(n int) int { return (n + 3) &^ 3 }

func u32(b []byte) (int, bool) {
	if len(b) < 4 {
		return 0, false
	}
	return int(binary.NativeEndian.Uint32(b)), true
}

func prefix(b []byte, bits int) netip.Prefix {
	a, ok := netip.AddrFromSlice(b)
	if !ok || bits == 0 {
		return netip.Prefix{}
	}
	return netip.PrefixFrom(a, bits)
}

// parseRule decodes struct fib_rule_hdr and its attributes.
func parseRule(b []byte) (Rule, bool) {
	const hdr = 12 // family dst_len src_len tos table res1 res2 action flags(u32)
	if len(b) < hdr {
		return Rule{}, false
	}
	r := Rule{Family: int(b[0]), Table: int(b[4]), Action: int(b[7]), SuppressPrefixLen: -1}
	r.Invert = binary.NativeEndian.Uint32(b[8:12])&unix.FIB_RULE_INVERT != 0
	a := attrs(b[hdr:])
	r.Src = prefix(a[unix.FRA_SRC], int(b[2]))
	r.Dst = prefix(a[unix.FRA_DST], int(b[1]))
	if t, ok := u32(a[unix.FRA_TABLE]); ok {
		r.Table = t
	}
	if p, ok := u32(a[unix.FRA_PRIORITY]); ok {
		r.Priority = p
	}
	if m, ok := u32(a[unix.FRA_FWMARK]); ok {
		r.Mark = uint32(m)
	}
	if n, ok := u32(a[unix.FRA_SUPPRESS_PREFIXLEN]); ok {
		r.SuppressPrefixLen = int(int32(n))
	}
	r.IIf = cstring(a[unix.FRA_IIFNAME])
	r.OIf = cstring(a[unix.FRA_OIFNAME])
	return r, true
}

// parseRoute decodes struct rtmsg and its attributes.
func parseRoute(b []byte) (Route, bool) {
	if len(b) < unix.SizeofRtMsg {
		return Route{}, false
	}
	r := Route{Family: int(b[0]), Table: int(b[4]), Type: int(b[7])}
	a := attrs(b[unix.SizeofRtMsg:])
	r.Dst = prefix(a[unix.RTA_DST], int(b[1]))
	if t, ok := u32(a[unix.RTA_TABLE]); ok {
		r.Table = t
	}
	if m, ok := u32(a[unix.RTA_PRIORITY]); ok {
		r.Metric = m
	}
	if o, ok := u32(a[unix.RTA_OIF]); ok {
		r.OIfs = append(r.OIfs, o)
	}
	for mp := a[unix.RTA_MULTIPATH]; len(mp) >= unix.SizeofRtNexthop; {
		l := int(binary.NativeEndian.Uint16(mp[0:2]))
		if l < unix.SizeofRtNexthop || l > len(mp) {
			break
		}
		r.OIfs = append(r.OIfs, int(int32(binary.NativeEndian.Uint32(mp[4:8]))))
		mp = mp[min(align4(l), len(mp)):]
	}
	return r, true
}

func cstring(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}
