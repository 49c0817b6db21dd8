package nics

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"

	"golang.org/x/sys/unix"
)

// Lookup routes a packet from src to an address on the internet the way the
// kernel's policy routing would: rules in priority order, the first table
// that holds a default route wins. names maps interface indexes to names.
// Rules that select on a mark, an output interface, an input interface other
// than lo, or a destination prefix are ignored: they do not apply to a plain
// connection to S3. So are rules that suppress default routes.
func (rt *Routing) Lookup(src netip.Addr, names map[int]string) SourceRoute {
	fam := unix.AF_INET
	if src.Is6() && !src.Is4In6() {
		fam = unix.AF_INET6
	}
	rules := slices.Clone(rt.Rules)
	slices.SortStableFunc(rules, func(a, b Rule) int { return cmp.Compare(a.Priority, b.Priority) })
	for _, r := range rules {
		if r.Family != fam || r.Mark != 0 || r.OIf != "" || (r.IIf != "" && r.IIf != "lo") ||
			(r.Dst.IsValid() && r.Dst.Bits() > 0) {
			continue
		}
		// "lookup main suppress_prefixlength 0" (used by some EC2 and VPN
		// set-ups) never yields a default route: the lookup goes on.
		if r.SuppressPrefixLen >= 0 {
			continue
		}
		specific := r.Src.IsValid() && r.Src.Bits() > 0
		match := !specific || r.Src.Contains(src)
		if r.Invert {
			match = !match
		}
		if !match {
			continue
		}
		prio := -1
		if specific {
			prio = r.Priority
		}
		switch r.Action {
		case unix.FR_ACT_TO_TBL:
			if d, ok := rt.defaultRoute(fam, r.Table); ok {
				out := SourceRoute{Source: src, Rule: prio, Table: r.Table}
				if d.Type == unix.RTN_UNICAST && len(d.OIfs) > 0 {
					out.Via = names[d.OIfs[0]]
				}
				return out
			}
		case unix.FR_ACT_BLACKHOLE, unix.FR_ACT_UNREACHABLE, unix.FR_ACT_PROHIBIT:
			return SourceRoute{Source: src, Rule: prio}
		}
	}
	return SourceRoute{Source: src, Rule: -1}
}

// defaultRoute returns the lowest-metric default route of a table.
func (rt *Routing) defaultRoute(fam, table int) (Route, bool) {
	var best Route
	found := false
	for _, r := range rt.Routes {
		if r.Family != fam || r.Table != table || (r.Dst.IsValid() && r.Dst.Bits() > 0) {
			continue
		}
		if !found || r.Metric < best.Metric {
			best, found = r, true
		}
	}
	return best, found
}

// attachRoutes fills Interface.Routes for every usable interface.
func attachRoutes(ifaces []Interface, rt *Routing) {
	names := make(map[int]string, len(ifaces))
	for _, i := range ifaces {
		names[i.Index] = i.Name
	}
	for k := range ifaces {
		if !ifaces[k].Usable() {
			continue
		}
		for _, src := range ifaces[k].sources() {
			ifaces[k].Routes = append(ifaces[k].Routes, rt.Lookup(src, names))
		}
	}
}

// warnings explains why a set-up would not spread traffic over the cards.
// routing says whether Interface.Routes were filled.
func warnings(ifaces []Interface, routing bool) []Warning {
	var cands []Interface
	for _, i := range ifaces {
		if i.Candidate() {
			cands = append(cands, i)
		}
	}
	switch len(cands) {
	case 0:
		return []Warning{{Message: "no interface is up with an address (loopback and bridges aside): there is nothing to pass to --nics"}}
	case 1:
		return []Warning{{Interface: cands[0].Name,
			Message: "only " + cands[0].Name + " can carry traffic: --nics gains nothing on this machine"}}
	}
	var out []Warning
	if routing {
		for _, i := range cands {
			if w, ok := routeWarning(i); ok {
				out = append(out, w)
			}
		}
	}
	out = append(out, subnetWarnings(cands, routing)...)
	return out
}

// routeWarning checks that packets from the interface's source address leave
// through the interface.
func routeWarning(i Interface) (Warning, bool) {
	src, _ := i.SourceAddr()
	var r SourceRoute
	for _, x := range i.Routes {
		if x.Source == src {
			r = x
		}
	}
	if r.Via == i.Name {
		return Warning{}, false
	}
	fix := policyFix(i, src)
	if i.RPFilter == 1 {
		fix += fmt.Sprintf("; strict rp_filter may drop replies on %s until then (sysctl -w net.ipv4.conf.%s.rp_filter=2)", i.Name, i.Name)
	}
	if r.Via == "" {
		return Warning{Interface: i.Name, Fix: fix, Message: fmt.Sprintf(
			"no default route applies to traffic from %s (%s): it cannot reach S3 through any card", src, i.Name)}, true
	}
	return Warning{Interface: i.Name, Fix: fix, Message: fmt.Sprintf(
		"no policy rule sends traffic from %s out of %s: it leaves through %s instead, so %s adds no bandwidth",
		src, i.Name, r.Via, i.Name)}, true
}

// policyFix returns the two commands that give src its own table whose
// default route leaves through the interface. The gateway guessed is the
// subnet's first host address, where the EC2 VPC router answers.
func policyFix(i Interface, src netip.Addr) string {
	table := 100 + i.Index
	gw := "GATEWAY"
	for _, p := range append(slices.Clone(i.IPv4), i.IPv6...) {
		if p.Addr() == src && src.Is4() && p.Bits() < 31 {
			gw = p.Masked().Addr().Next().String()
		}
	}
	fam := ""
	if src.Is6() {
		fam = "-6 "
	}
	return fmt.Sprintf("ip %srule add from %s lookup %d && ip %sroute add default via %s dev %s table %d",
		fam, src, table, fam, gw, i.Name, table)
}

// subnetWarnings flags interfaces that share an IPv4 subnet while at least
// one of them lacks its own route: Linux then answers and sends from either.
func subnetWarnings(cands []Interface, routing bool) []Warning {
	var out []Warning
	for a := 0; a < len(cands); a++ {
		for b := a + 1; b < len(cands); b++ {
			x, y := cands[a], cands[b]
			if routing && routesThroughItself(x) && routesThroughItself(y) {
				continue
			}
			for _, p := range x.IPv4 {
				for _, q := range y.IPv4 {
					if p.Masked() == q.Masked() {
						out = append(out, Warning{Interface: y.Name,
							Message: fmt.Sprintf("%s and %s share subnet %s without a policy rule per address: the kernel may send and answer ARP for both from one card",
								x.Name, y.Name, p.Masked()),
							Fix: "add a rule and table per address (see the other warnings) and sysctl -w net.ipv4.conf.all.arp_ignore=1 net.ipv4.conf.all.arp_announce=2"})
					}
				}
			}
		}
	}
	return out
}
