// Package nics finds the machine's network interfaces, checks that each one
// can carry its own share of an S3 transfer (source-based policy routing), and
// builds dialers bound to one interface that spread connections over every
// address an endpoint resolves to.
package nics

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Interface is one network interface as s3pd sees it.
type Interface struct {
	Name     string `json:"name"`
	Index    int    `json:"index"`
	Up       bool   `json:"up"`
	Loopback bool   `json:"loopback,omitempty"`
	MTU      int    `json:"mtu"`
	// IPv4 and IPv6 hold the interface's addresses with their prefix length.
	IPv4 []netip.Prefix `json:"ipv4"`
	IPv6 []netip.Prefix `json:"ipv6"`
	// SpeedMbps is the link speed from sysfs; 0 when unknown.
	SpeedMbps int `json:"speed_mbps,omitempty"`
	// Driver is the kernel driver's name (ena, mlx5_core, veth); empty when
	// sysfs does not say.
	Driver string `json:"driver,omitempty"`
	// Bridge is true for a Linux bridge (docker0, virbr0): never a candidate.
	Bridge bool `json:"bridge,omitempty"`
	// DefaultRoute is true when the main table's default route (IPv4 or
	// IPv6) leaves through this interface.
	DefaultRoute bool `json:"default_route"`
	// RPFilter is the effective reverse-path filter mode (0 off, 1 strict,
	// 2 loose); -1 when unknown.
	RPFilter int `json:"rp_filter"`
	// Routes says, for each source address, which interface a packet from
	// that address to the internet leaves through. Empty when the routing
	// rules could not be read.
	Routes []SourceRoute `json:"routes,omitempty"`
}

// SourceRoute is the outcome of routing a packet from one source address to
// an address on the internet.
type SourceRoute struct {
	Source netip.Addr `json:"source"`
	// Rule is the priority of the policy rule that chose the table, or -1
	// when no "from ADDR" rule matched (the catch-all rules did).
	Rule int `json:"rule"`
	// Table is the routing table that held the default route; 0 when none.
	Table int `json:"table"`
	// Via is the interface the default route leaves through; empty when no
	// default route applies.
	Via string `json:"via"`
}

// OK reports whether packets from the source leave through iface, chosen by
// a rule for that source.
func (r SourceRoute) OK(iface string) bool { return r.Rule >= 0 && r.Via == iface }

// Usable reports whether the interface can carry a transfer: up, not the
// loopback, with an IPv4 address or a global IPv6 address.
func (i Interface) Usable() bool {
	_, ok := i.SourceAddr()
	return i.Up && !i.Loopback && ok
}

// Candidate reports whether `--nics all` and the suggested --nics value
// should consider the interface: usable and not a bridge.
func (i Interface) Candidate() bool { return i.Usable() && !i.Bridge }

// SourceAddr returns the address a dialer bound to the interface uses: the
// first IPv4 address, else the first global IPv6 address.
func (i Interface) SourceAddr() (netip.Addr, bool) {
	if a := i.sources(); len(a) > 0 {
		return a[0], true
	}
	return netip.Addr{}, false
}

// sources lists the IPv4 and global IPv6 addresses, IPv4 first.
func (i Interface) sources() []netip.Addr {
	var out []netip.Addr
	for _, p := range i.IPv4 {
		if !p.Addr().IsLinkLocalUnicast() {
			out = append(out, p.Addr())
		}
	}
	for _, p := range i.IPv6 {
		if a := p.Addr(); a.IsGlobalUnicast() {
			out = append(out, a)
		}
	}
	return out
}

// Options says where discovery reads from; the zero value reads the running
// system. Tests and callers that run inside another network namespace point
// the roots elsewhere.
type Options struct {
	// ProcNet holds route and ipv6_route; default /proc/thread-self/net, so
	// a thread moved into another namespace with setns reads its own.
	ProcNet string
	// ProcSys is /proc/sys (rp_filter settings).
	ProcSys string
	// SysClassNet is /sys/class/net (speed, driver, bridge). sysfs shows the
	// namespace it was mounted in, so a thread that only called setns sees
	// the wrong one: speed and driver are then left empty.
	SysClassNet string
	// Links lists the interfaces; default net.Interfaces.
	Links func() ([]net.Interface, error)
	// Routing reads policy rules and routes; default Netlink. When it fails,
	// Discover warns and goes on without the policy-routing check.
	Routing RoutingReader
	// SkipRouting skips the policy-routing check.
	SkipRouting bool
}

func (o Options) withDefaults() Options {
	if o.ProcNet == "" {
		o.ProcNet = "/proc/thread-self/net"
		if _, err := os.Stat(o.ProcNet); err != nil {
			o.ProcNet = "/proc/net"
		}
	}
	if o.ProcSys == "" {
		o.ProcSys = "/proc/sys"
	}
	if o.SysClassNet == "" {
		o.SysClassNet = "/sys/class/net"
	}
	if o.Links == nil {
		o.Links = net.Interfaces
	}
	if o.Routing == nil {
		o.Routing = Netlink{}
	}
	return o
}

// Report is the result of Discover.
type Report struct {
	Interfaces []Interface `json:"interfaces"`
	// Suggested lists the interfaces worth passing to --nics.
	Suggested []string `json:"suggested"`
	// NICs is Suggested as a ready-to-paste --nics value.
	NICs     string    `json:"nics"`
	Warnings []Warning `json:"warnings"`
}

// Warning describes a set-up that will not spread traffic over the cards.
type Warning struct {
	Interface string `json:"interface,omitempty"`
	Message   string `json:"message"`
	// Fix is a shell command or a hint that would remove the warning.
	Fix string `json:"fix,omitempty"`
}

// Discover lists the interfaces, checks policy routing and derives the
// suggested --nics value and the warnings.
func Discover(ctx context.Context, opts Options) (*Report, error) {
	opts = opts.withDefaults()
	ifaces, err := List(opts)
	if err != nil {
		return nil, err
	}
	routing := !opts.SkipRouting
	var readErr error
	if routing {
		rt, err := opts.Routing.ReadRouting(ctx)
		if err != nil {
			readErr, routing = err, false
		} else {
			attachRoutes(ifaces, rt)
		}
	}
	rep := &Report{Interfaces: ifaces, Warnings: warnings(ifaces, routing)}
	if readErr != nil {
		rep.Warnings = append(rep.Warnings, Warning{
			Message: fmt.Sprintf("policy routing not checked: read routing rules: %v", readErr)})
	}
	rep.Suggested = suggest(ifaces, routing)
	rep.NICs = strings.Join(rep.Suggested, ",")
	if rep.Suggested == nil {
		rep.Suggested = []string{}
	}
	if rep.Warnings == nil {
		rep.Warnings = []Warning{}
	}
	return rep, nil
}

// List returns the interfaces with their addresses, sysfs details and
// default-route holder, without the policy-routing check.
func List(opts Options) ([]Interface, error) {
	opts = opts.withDefaults()
	links, err := opts.Links()
	if err != nil {
		return nil, fmt.Errorf("list interfaces: %w", err)
	}
	defaults, err := defaultRouteInterfaces(opts.ProcNet)
	if err != nil {
		return nil, err
	}
	out := make([]Interface, 0, len(links))
	for _, l := range links {
		iface := Interface{
			Name:     l.Name,
			Index:    l.Index,
			Up:       l.Flags&net.FlagUp != 0 && l.Flags&net.FlagRunning != 0,
			Loopback: l.Flags&net.FlagLoopback != 0,
			MTU:      l.MTU,
			IPv4:     []netip.Prefix{},
			IPv6:     []netip.Prefix{},
		}
		addrs, err := l.Addrs()
		if err != nil {
			return nil, fmt.Errorf("list addresses of %s: %w", l.Name, err)
		}
		for _, a := range addrs {
			n, ok := a.(*net.IPNet)
			if !ok {
				continue
			}
			ip, ok := netip.AddrFromSlice(n.IP)
			if !ok {
				continue
			}
			ones, _ := n.Mask.Size()
			ip = ip.Unmap()
			p := netip.PrefixFrom(ip, ones)
			if ip.Is4() {
				iface.IPv4 = append(iface.IPv4, p)
			} else {
				iface.IPv6 = append(iface.IPv6, p)
			}
		}
		iface.DefaultRoute = slices.Contains(defaults, l.Name)
		readSysfs(&iface, filepath.Join(opts.SysClassNet, l.Name))
		iface.RPFilter = readRPFilter(opts.ProcSys, l.Name)
		out = append(out, iface)
	}
	return out, nil
}

// suggest picks the interfaces for --nics: candidates whose traffic leaves
// through themselves. Without routing information, every candidate.
func suggest(ifaces []Interface, routing bool) []string {
	var out []string
	for _, i := range ifaces {
		if !i.Candidate() {
			continue
		}
		if routing && !routesThroughItself(i) {
			continue
		}
		out = append(out, i.Name)
	}
	return out
}

// routesThroughItself reports whether the interface's first source address
// leaves through the interface, by a policy rule or by the main table.
func routesThroughItself(i Interface) bool {
	src, ok := i.SourceAddr()
	if !ok {
		return false
	}
	for _, r := range i.Routes {
		if r.Source == src {
			return r.Via == i.Name
		}
	}
	return false
}
