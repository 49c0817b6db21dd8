package nics

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestSelect(t *testing.T) {
	ifaces := append(ec2Ifaces(),
		Interface{Name: "ens8", Index: 6, Up: true},
		Interface{Name: "ens9", Index: 7, Up: true, IPv6: []netip.Prefix{netip.MustParsePrefix("fe80::1/64")}},
		Interface{Name: "ens10", Index: 8, Up: true, IPv6: []netip.Prefix{netip.MustParsePrefix("2600:1f18::5/128")}},
	)
	tests := []struct {
		spec    string
		want    []string
		wantErr string
	}{
		{"all", []string{"ens5", "ens6", "ens10"}, ""},
		{"ens6,ens5", []string{"ens6", "ens5"}, ""},
		{" ens5 , ens5,", []string{"ens5"}, ""},
		{"ens10", []string{"ens10"}, ""},
		{"docker0", []string{"docker0"}, ""}, // named explicitly: the user knows
		{"ens5,eth9", nil, "--nics eth9: unknown interface (have lo, ens5"},
		{"ens7", nil, "--nics ens7: interface is down"},
		{"lo", nil, "--nics lo: the loopback interface cannot reach S3"},
		{"ens8", nil, "--nics ens8: interface has no IPv4 or global IPv6 address"},
		{"ens9", nil, "--nics ens9: interface has no IPv4 or global IPv6 address"},
		{"", nil, "--nics: empty value"},
		{",", nil, "no interface named"},
	}
	for _, tt := range tests {
		got, err := Select(ifaces, tt.spec)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, ErrNoInterface) {
				t.Errorf("Select(%q): got error %v, want one containing %q wrapping ErrNoInterface", tt.spec, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("Select(%q): %v", tt.spec, err)
			continue
		}
		var names []string
		for _, i := range got {
			names = append(names, i.Name)
		}
		if !slices.Equal(names, tt.want) {
			t.Errorf("Select(%q): got %v, want %v", tt.spec, names, tt.want)
		}
	}
	if _, err := Select(ec2Ifaces()[:1], "all"); err == nil || !errors.Is(err, ErrNoInterface) {
		t.Errorf("Select(all) with only lo: got %v, want ErrNoInterface", err)
	}
}

// TestHostDiscovery runs discovery against this machine: every network
// namespace has a loopback interface and the three default rules.
func TestHostDiscovery(t *testing.T) {
	rt, err := Netlink{}.ReadRouting(context.Background())
	if err != nil {
		t.Fatalf("read routing: %v", err)
	}
	var mainRule, localRoute bool
	for _, r := range rt.Rules {
		if r.Family == unix.AF_INET && r.Priority == 32766 && r.Table == unix.RT_TABLE_MAIN && !r.Src.IsValid() {
			mainRule = true
		}
	}
	for _, r := range rt.Routes {
		if r.Family == unix.AF_INET && r.Table == unix.RT_TABLE_LOCAL && r.Dst == netip.MustParsePrefix("127.0.0.1/32") {
			localRoute = true
		}
	}
	if !mainRule || !localRoute {
		t.Errorf("netlink dump: got main rule %v, local route 127.0.0.1/32 %v, want both (%d rules, %d routes)",
			mainRule, localRoute, len(rt.Rules), len(rt.Routes))
	}

	rep, err := Discover(context.Background(), Options{})
	if err != nil {
		t.Fatalf("Discover: %v", err)
	}
	var lo *Interface
	for k := range rep.Interfaces {
		if rep.Interfaces[k].Loopback {
			lo = &rep.Interfaces[k]
		}
	}
	if lo == nil || !slices.Contains(lo.IPv4, netip.MustParsePrefix("127.0.0.1/8")) {
		t.Fatalf("Discover: got %+v, want a loopback with 127.0.0.1/8", rep.Interfaces)
	}
	if slices.Contains(rep.Suggested, lo.Name) || len(lo.Routes) != 0 {
		t.Errorf("Discover: loopback suggested or routed: %+v", rep)
	}
	if _, err := Resolve(lo.Name); err == nil {
		t.Errorf("Resolve(%s): got no error, want the loopback refused", lo.Name)
	}
}
