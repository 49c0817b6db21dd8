package nics

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// ec2Routing is two ENIs in one subnet, as Amazon Linux sets them up, before
// any per-address rules: main holds a default route through each.
func ec2Routing(extra ...Rule) *Routing {
	rules := []Rule{
		{Family: unix.AF_INET, Priority: 0, Table: 255, Action: unix.FR_ACT_TO_TBL, SuppressPrefixLen: -1},
		{Family: unix.AF_INET, Priority: 32766, Table: 254, Action: unix.FR_ACT_TO_TBL, SuppressPrefixLen: -1},
		{Family: unix.AF_INET, Priority: 32767, Table: 253, Action: unix.FR_ACT_TO_TBL, SuppressPrefixLen: -1},
		{Family: unix.AF_INET6, Priority: 32766, Table: 254, Action: unix.FR_ACT_TO_TBL, SuppressPrefixLen: -1},
	}
	return &Routing{
		Rules: append(rules, extra...),
		Routes: []Route{
			{Family: unix.AF_INET, Table: 255, Dst: netip.MustParsePrefix("10.0.0.10/32"), Type: unix.RTN_LOCAL, OIfs: []int{2}},
			{Family: unix.AF_INET, Table: 254, Type: unix.RTN_UNICAST, Metric: 512, OIfs: []int{2}},
			{Family: unix.AF_INET, Table: 254, Type: unix.RTN_UNICAST, Metric: 513, OIfs: []int{3}},
			{Family: unix.AF_INET, Table: 254, Dst: netip.MustParsePrefix("10.0.0.0/24"), Type: unix.RTN_UNICAST, OIfs: []int{2}},
			{Family: unix.AF_INET, Table: 102, Type: unix.RTN_UNICAST, OIfs: []int{2}},
			{Family: unix.AF_INET, Table: 103, Type: unix.RTN_UNICAST, OIfs: []int{3}},
			{Family: unix.AF_INET6, Table: 254, Type: unix.RTN_UNICAST, OIfs: []int{3}},
		},
	}
}

func rule(prio int, from string, table int) Rule {
	return Rule{Family: unix.AF_INET, Priority: prio, Src: netip.MustParsePrefix(from), Table: table, Action: unix.FR_ACT_TO_TBL, SuppressPrefixLen: -1}
}

func TestLookup(t *testing.T) {
	names := map[int]string{2: "ens5", 3: "ens6"}
	src := netip.MustParseAddr("10.0.0.20")
	unreachable := rule(100, "10.0.0.20/32", 0)
	unreachable.Action = unix.FR_ACT_UNREACHABLE
	marked := rule(50, "0.0.0.0/0", 103)
	marked.Src, marked.Mark = netip.Prefix{}, 7
	inverted := rule(100, "10.0.0.10/32", 103)
	inverted.Invert = true
	suppressed := rule(10, "0.0.0.0/0", 254)
	suppressed.Src, suppressed.SuppressPrefixLen = netip.Prefix{}, 0
	tests := []struct {
		name string
		rt   *Routing
		src  netip.Addr
		want SourceRoute
	}{
		{"no rule: main", ec2Routing(), src, SourceRoute{Source: src, Rule: -1, Table: 254, Via: "ens5"}},
		{"own rule", ec2Routing(rule(10001, "10.0.0.20/32", 103)), src, SourceRoute{Source: src, Rule: 10001, Table: 103, Via: "ens6"}},
		{"subnet rule", ec2Routing(rule(10001, "10.0.0.16/28", 103)), src, SourceRoute{Source: src, Rule: 10001, Table: 103, Via: "ens6"}},
		{"rule for another address", ec2Routing(rule(10001, "10.0.0.10/32", 103)), src, SourceRoute{Source: src, Rule: -1, Table: 254, Via: "ens5"}},
		{"empty table falls through", ec2Routing(rule(10001, "10.0.0.20/32", 104)), src, SourceRoute{Source: src, Rule: -1, Table: 254, Via: "ens5"}},
		{"rule after main", ec2Routing(rule(40000, "10.0.0.20/32", 103)), src, SourceRoute{Source: src, Rule: -1, Table: 254, Via: "ens5"}},
		{"fwmark rule ignored", ec2Routing(marked), src, SourceRoute{Source: src, Rule: -1, Table: 254, Via: "ens5"}},
		{"unreachable", ec2Routing(unreachable), src, SourceRoute{Source: src, Rule: 100}},
		{"main suppressing defaults first", ec2Routing(suppressed, rule(10001, "10.0.0.20/32", 103)), src, SourceRoute{Source: src, Rule: 10001, Table: 103, Via: "ens6"}},
		{"inverted", ec2Routing(inverted), src, SourceRoute{Source: src, Rule: 100, Table: 103, Via: "ens6"}},
		{"ipv6 main", ec2Routing(), netip.MustParseAddr("2600::1"), SourceRoute{Source: netip.MustParseAddr("2600::1"), Rule: -1, Table: 254, Via: "ens6"}},
		{"no rules at all", &Routing{}, src, SourceRoute{Source: src, Rule: -1}},
	}
	for _, tt := range tests {
		if got := tt.rt.Lookup(tt.src, names); got != tt.want {
			t.Errorf("%s: got %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

func ec2Ifaces() []Interface {
	return []Interface{
		{Name: "lo", Index: 1, Up: true, Loopback: true, IPv4: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/8")}},
		{Name: "ens5", Index: 2, Up: true, MTU: 9001, IPv4: []netip.Prefix{netip.MustParsePrefix("10.0.0.10/24")}, RPFilter: 0},
		{Name: "ens6", Index: 3, Up: true, MTU: 9001, IPv4: []netip.Prefix{netip.MustParsePrefix("10.0.0.20/24")}, RPFilter: 1},
		{Name: "docker0", Index: 4, Up: true, Bridge: true, IPv4: []netip.Prefix{netip.MustParsePrefix("172.17.0.1/16")}},
		{Name: "ens7", Index: 5, Up: false, IPv4: []netip.Prefix{netip.MustParsePrefix("10.0.1.5/24")}},
	}
}

func TestWarningsAndSuggestion(t *testing.T) {
	both := ec2Routing(rule(10001, "10.0.0.10/32", 102), rule(10002, "10.0.0.20/32", 103))
	tests := []struct {
		name    string
		ifaces  []Interface
		rt      *Routing
		want    []string // interface of each warning, in order
		message string   // a part of the first warning
		fix     string   // a part of the first warning's fix
		suggest []string
	}{
		{"rules for both", ec2Ifaces(), both, nil, "", "", []string{"ens5", "ens6"}},
		{"ens6 has no rule", ec2Ifaces(), ec2Routing(rule(10001, "10.0.0.10/32", 102)), []string{"ens6", "ens6"},
			"leaves through ens5", "ip rule add from 10.0.0.20 lookup 103 && ip route add default via 10.0.0.1 dev ens6 table 103; strict rp_filter", []string{"ens5"}},
		{"no default anywhere", ec2Ifaces(), &Routing{}, []string{"ens5", "ens6", "ens6"},
			"no default route applies to traffic from 10.0.0.10", "ip rule add from 10.0.0.10 lookup 102", nil},
		{"one card", ec2Ifaces()[:2], both, []string{"ens5"}, "only ens5", "", []string{"ens5"}},
		{"nothing usable", ec2Ifaces()[:1], both, []string{""}, "no interface is up", "", nil},
	}
	for _, tt := range tests {
		ifaces := tt.ifaces
		attachRoutes(ifaces, tt.rt)
		ws := warnings(ifaces, true)
		var got []string
		for _, w := range ws {
			got = append(got, w.Interface)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: got warnings for %q, want %q: %+v", tt.name, got, tt.want, ws)
			continue
		}
		if len(ws) > 0 && (!strings.Contains(ws[0].Message, tt.message) || !strings.Contains(ws[0].Fix, tt.fix)) {
			t.Errorf("%s: got %+v, want message with %q and fix with %q", tt.name, ws[0], tt.message, tt.fix)
		}
		if s := suggest(ifaces, true); !slices.Equal(s, tt.suggest) {
			t.Errorf("%s: got suggestion %v, want %v", tt.name, s, tt.suggest)
		}
	}
}

func TestWarningsWithoutRouting(t *testing.T) {
	ws := warnings(ec2Ifaces(), false)
	if len(ws) != 1 || !strings.Contains(ws[0].Message, "share subnet 10.0.0.0/24") {
		t.Errorf("got %+v, want one shared-subnet warning", ws)
	}
	if s := suggest(ec2Ifaces(), false); !slices.Equal(s, []string{"ens5", "ens6"}) {
		t.Errorf("got suggestion %v, want [ens5 ens6]", s)
	}
}
