// Package netnstest builds network namespaces for tests that need several
// network cards: a server namespace and a client namespace joined by veth
// pairs, each pair its own subnet in 198.18.0.0/15 (set aside for
// benchmarking), optionally capped with tbf, with source-based policy
// routing in the client and rp_filter off; or (NewFabric) node namespaces on
// a bridge with a source namespace behind one shared, capped link, as a
// cluster's nodes and the store they share. It runs commands or Go functions
// inside a namespace and reads per-interface byte counters. Everything it
// makes is removed when the test ends, also when it fails. It needs root,
// iproute2 and (for caps) tc; without them the test is skipped, unless
// CI=true or S3PD_NETNS_REQUIRED=1 asks for a failure instead (CI runs as
// root and must not skip silently).
package netnstest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Link configures one veth pair between the namespaces.
type Link struct {
	// RateMbit caps each direction of the pair with tbf, in Mbit/s; 0 leaves
	// it uncapped.
	RateMbit int
	// NoPolicy leaves out the client's policy rule for this link's address,
	// the mistake `s3pd nics` must flag.
	NoPolicy bool
}

// Config says what New builds.
type Config struct {
	Links []Link
	// ServiceAddrs is how many addresses (198.19.0.1, .2, ...) the server
	// holds on its loopback, reachable from the client through every link,
	// as an S3 endpoint is reachable through every card; default 1.
	ServiceAddrs int
	// MTU of every veth; default 9001, as on EC2 inside a VPC. Jumbo frames
	// also keep the per-packet CPU cost down on a small test machine.
	MTU int
	// Hosts maps host names to addresses in /etc/netns/CLIENT/hosts, which
	// `ip netns exec CLIENT` shows as /etc/hosts.
	Hosts map[string][]netip.Addr
}

// LinkInfo describes one veth pair New built.
type LinkInfo struct {
	ClientIf, ServerIf     string // nic0 in the client, srv0 in the server
	ClientAddr, ServerAddr netip.Addr
	Prefix                 netip.Prefix // 198.18.I.0/24
	// Table is the client routing table whose default route leaves through
	// this link; a rule "from ClientAddr lookup Table" selects it unless
	// Link.NoPolicy.
	Table    int
	RateMbit int
}

// Env is a pair of namespaces joined by links.
type Env struct {
	Client, Server string // namespace names, as `ip netns` knows them
	Links          []LinkInfo
	// Service are the server's loopback addresses reachable from the client.
	Service []netip.Addr
	t       testing.TB
}

// skip skips (or, under CI=true or with S3PD_NETNS_REQUIRED=1, fails) the test.
func skip(t testing.TB, format string, a ...any) {
	t.Helper()
	if os.Getenv("S3PD_NETNS_REQUIRED") == "1" || os.Getenv("CI") == "true" {
		t.Fatalf("netnstest: "+format+" (S3PD_NETNS_REQUIRED=1)", a...)
	}
	t.Skipf("netnstest: "+format, a...)
}

// Available skips the test unless namespaces can be made here: root, ip and
// tc found.
func Available(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		skip(t, "needs root to create network namespaces (uid %d)", os.Geteuid())
	}
	for _, tool := range []string{"ip", "tc"} {
		if _, err := exec.LookPath(tool); err != nil {
			skip(t, "needs %s (iproute2): %v", tool, err)
		}
	}
}

// New builds the namespaces, links, caps, routes and hosts file, and removes
// them all when the test ends.
func New(t testing.TB, cfg Config) *Env {
	t.Helper()
	Available(t)
	if len(cfg.Links) == 0 || len(cfg.Links) > 200 {
		t.Fatalf("netnstest: got %d links, want 1 to 200", len(cfg.Links))
	}
	if cfg.ServiceAddrs <= 0 {
		cfg.ServiceAddrs = 1
	}
	if cfg.MTU <= 0 {
		cfg.MTU = 9001
	}
	id := randomID(t)
	e := &Env{Client: "s3pdt-" + id + "-c", Server: "s3pdt-" + id + "-s", t: t}

	for _, ns := range []string{e.Server, e.Client} {
		if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
			skip(t, "cannot create namespace %s: %v: %s", ns, err, bytes.TrimSpace(out))
		}
		t.Cleanup(func() {
			if out, err := exec.Command("ip", "netns", "del", ns).CombinedOutput(); err != nil {
				t.Errorf("netnstest: remove namespace %s: %v: %s", ns, err, out)
			}
		})
		e.sysctls(ns, "all", "default", "lo")
		e.ip(ns, "link", "set", "lo", "up")
	}
	for k := 1; k <= cfg.ServiceAddrs; k++ {
		a := netip.AddrFrom4([4]byte{198, 19, byte(k >> 8), byte(k)})
		e.Service = append(e.Service, a)
		e.ip(e.Server, "addr", "add", a.String()+"/32", "dev", "lo")
	}
	for i, l := range cfg.Links {
		li := LinkInfo{
			ClientIf: fmt.Sprintf("nic%d", i), ServerIf: fmt.Sprintf("srv%d", i),
			Prefix:     netip.PrefixFrom(netip.AddrFrom4([4]byte{198, 18, byte(i), 0}), 24),
			ServerAddr: netip.AddrFrom4([4]byte{198, 18, byte(i), 1}),
			ClientAddr: netip.AddrFrom4([4]byte{198, 18, byte(i), 2}),
			Table:      100 + i, RateMbit: l.RateMbit,
		}
		run(t, "ip", "link", "add", li.ClientIf, "netns", e.Client, "type", "veth",
			"peer", "name", li.ServerIf, "netns", e.Server)
		for _, end := range []struct{ ns, dev, addr string }{
			{e.Client, li.ClientIf, li.ClientAddr.String()},
			{e.Server, li.ServerIf, li.ServerAddr.String()},
		} {
			e.sysctls(end.ns, end.dev)
			e.ip(end.ns, "addr", "add", end.addr+"/24", "dev", end.dev)
			e.ip(end.ns, "link", "set", end.dev, "mtu", strconv.Itoa(cfg.MTU), "up")
			if l.RateMbit > 0 {
				run(t, "tc", "-n", end.ns, "qdisc", "add", "dev", end.dev, "root", "tbf",
					"rate", fmt.Sprintf("%dmbit", l.RateMbit), "burst", strconv.Itoa(burst(l.RateMbit, cfg.MTU)),
					"latency", "50ms")
			}
		}
		gw := li.ServerAddr.String()
		if i == 0 {
			e.ip(e.Client, "route", "add", "default", "via", gw, "dev", li.ClientIf)
		}
		e.ip(e.Client, "route", "add", "default", "via", gw, "dev", li.ClientIf, "table", strconv.Itoa(li.Table))
		if !l.NoPolicy {
			e.ip(e.Client, "rule", "add", "from", li.ClientAddr.String(), "lookup", strconv.Itoa(li.Table),
				"priority", strconv.Itoa(1000+i))
		}
		e.Links = append(e.Links, li)
	}
	if len(cfg.Hosts) > 0 {
		e.writeHosts(cfg.Hosts)
	}
	return e
}

// burst is the tbf bucket for a rate: 10 ms of traffic, and at least a few
// full-size packets so small rates still pass smoothly.
func burst(rateMbit, mtu int) int {
	return max(rateMbit*1_000_000/8/100, 4*(mtu+100), 32<<10)
}

// sysctls turns rp_filter off for the given interfaces (all, default, or
// names) of a namespace: replies may come back on another link than the
// kernel's own route would choose.
func (e *Env) sysctls(ns string, devs ...string) {
	e.t.Helper()
	err := e.Do(ns, func() error {
		for _, d := range devs {
			p := filepath.Join("/proc/sys/net/ipv4/conf", d, "rp_filter")
			if err := os.WriteFile(p, []byte("0\n"), 0o644); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		e.t.Fatalf("netnstest: rp_filter off in %s: %v", ns, err)
	}
}

// writeHosts writes /etc/netns/CLIENT/hosts.
func (e *Env) writeHosts(hosts map[string][]netip.Addr) {
	e.t.Helper()
	dir := filepath.Join("/etc/netns", e.Client)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		e.t.Fatalf("netnstest: %v", err)
	}
	e.t.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			e.t.Errorf("netnstest: remove %s: %v", dir, err)
		}
	})
	var b strings.Builder
	b.WriteString("127.0.0.1 localhost\n::1 localhost\n")
	for name, addrs := range hosts {
		for _, a := range addrs {
			fmt.Fprintf(&b, "%s %s\n", a, name)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "hosts"), []byte(b.String()), 0o644); err != nil {
		e.t.Fatalf("netnstest: %v", err)
	}
}

// Command returns a command that runs inside namespace ns through `ip netns
// exec`, which also shows the namespace's own /sys and /etc/netns/NS files.
// It runs without the test's S3PD_* variables (S3PD_NETNS_REQUIRED and
// the like are the harness's): an s3pd it runs takes its settings from
// its arguments, and refuses S3PD_* variables it does not know.
func (e *Env) Command(ctx context.Context, ns, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", ns, name}, args...)...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "S3PD_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	return cmd
}

// RxBytes reads /sys/class/net/IF/statistics/rx_bytes inside namespace ns.
func (e *Env) RxBytes(ns, ifname string) (uint64, error) {
	return e.statistic(ns, ifname, "rx_bytes")
}

// statistic reads /sys/class/net/IF/statistics/NAME inside namespace ns.
func (e *Env) statistic(ns, ifname, name string) (uint64, error) {
	out, err := e.Command(context.Background(), ns, "cat",
		filepath.Join("/sys/class/net", ifname, "statistics", name)).Output()
	if err != nil {
		return 0, fmt.Errorf("read %s of %s in %s: %w", name, ifname, ns, err)
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(out)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("read %s of %s in %s: %w", name, ifname, ns, err)
	}
	return n, nil
}

// ip runs `ip -n NS args...`, failing the test on error.
func (e *Env) ip(ns string, args ...string) {
	e.t.Helper()
	run(e.t, "ip", append([]string{"-n", ns}, args...)...)
}

func run(t testing.TB, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("netnstest: %s %s: %v: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
}

func randomID(t testing.TB) string {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatalf("netnstest: %v", err)
	}
	return hex.EncodeToString(b)
}
