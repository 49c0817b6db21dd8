package netnstest

import (
	"fmt"
	"net/netip"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// FabricConfig says what NewFabric builds: nodes on a fast bridge and an
// S3 server behind one shared, slower link.
type FabricConfig struct {
	// Nodes is how many node namespaces join the bridge (1 to 200).
	Nodes int
	// SourceRateMbit caps the source's one link to the bridge with tbf,
	// in Mbit/s, each direction: every node's traffic to and from the
	// source shares it, while node-to-node traffic crosses the bridge
	// uncapped. 0 leaves it uncapped.
	SourceRateMbit int
	// QueueLatency bounds the cap's queue (tbf's latency): how long a
	// packet may wait for the link before it is dropped; default 200 ms,
	// a switch's buffer rather than a shaper's, so that the many
	// connections of several nodes share the link instead of losing
	// their tails to drops.
	QueueLatency time.Duration
	// MTU of every veth and of the bridge; default 9001, as in New.
	MTU int
}

// Fabric is a bridge in a namespace of its own, Nodes namespaces each
// joined to it by a veth pair, and a source namespace joined to it by
// one veth pair that may be capped: a cluster's nodes on a fast network
// and a store they all reach through one slower path. Every interface
// is in one subnet, 198.18.0.0/24: the source at .1, the bridge at .2,
// node I at .(10+I).
type Fabric struct {
	// Env runs commands and functions in any of the namespaces
	// (Command, Do, Listen, DialContext, RxBytes). Its Server is the
	// source namespace; it has no Client and no Links.
	*Env
	Bridge string // namespace holding the bridge br0
	Source string // namespace of the S3 server
	// SourceAddr is the source's address; SourceIf its interface there,
	// where the cap on what it sends is.
	SourceAddr netip.Addr
	SourceIf   string
	// BridgeAddr is br0's own address: a listener made in Bridge on it
	// (a proxy) is reachable from every node and the source.
	BridgeAddr netip.Addr
	Nodes      []FabricNode
	RateMbit   int
}

// FabricNode is one node namespace of a Fabric.
type FabricNode struct {
	NS   string
	If   string // its interface, "fab0"
	Addr netip.Addr
}

// NewFabric builds the namespaces, bridge, links and cap, and removes
// them all when the test ends (processes started in them must be
// stopped by cleanups registered after this call, which run first).
func NewFabric(t testing.TB, cfg FabricConfig) *Fabric {
	t.Helper()
	Available(t)
	if cfg.Nodes <= 0 || cfg.Nodes > 200 {
		t.Fatalf("netnstest: got %d nodes, want 1 to 200", cfg.Nodes)
	}
	if cfg.MTU <= 0 {
		cfg.MTU = 9001
	}
	if cfg.QueueLatency <= 0 {
		cfg.QueueLatency = 200 * time.Millisecond
	}
	mtu := strconv.Itoa(cfg.MTU)
	id := randomID(t)
	f := &Fabric{
		Bridge: "s3pdt-" + id + "-f", Source: "s3pdt-" + id + "-s",
		SourceAddr: netip.AddrFrom4([4]byte{198, 18, 0, 1}), SourceIf: "src0",
		BridgeAddr: netip.AddrFrom4([4]byte{198, 18, 0, 2}),
		RateMbit:   cfg.SourceRateMbit,
	}
	f.Env = &Env{Server: f.Source, t: t}
	for i := range cfg.Nodes {
		f.Nodes = append(f.Nodes, FabricNode{
			NS: fmt.Sprintf("s3pdt-%s-n%d", id, i), If: "fab0",
			Addr: netip.AddrFrom4([4]byte{198, 18, 0, byte(10 + i)}),
		})
	}
	all := []string{f.Bridge, f.Source}
	for _, n := range f.Nodes {
		all = append(all, n.NS)
	}
	for _, ns := range all {
		if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
			skip(t, "cannot create namespace %s: %v: %s", ns, err, out)
		}
		t.Cleanup(func() {
			if out, err := exec.Command("ip", "netns", "del", ns).CombinedOutput(); err != nil {
				t.Errorf("netnstest: remove namespace %s: %v: %s", ns, err, out)
			}
		})
		f.sysctls(ns, "all", "default", "lo")
		f.ip(ns, "link", "set", "lo", "up")
	}
	f.ip(f.Bridge, "link", "add", "br0", "type", "bridge")
	f.ip(f.Bridge, "link", "set", "br0", "mtu", mtu)
	f.ip(f.Bridge, "addr", "add", f.BridgeAddr.String()+"/24", "dev", "br0")
	f.ip(f.Bridge, "link", "set", "br0", "up")

	// plug joins namespace ns to the bridge by a veth pair: dev in ns
	// with addr, port on the bridge.
	plug := func(ns, dev, port string, addr netip.Addr, rateMbit int) {
		run(t, "ip", "link", "add", dev, "netns", ns, "type", "veth", "peer", "name", port, "netns", f.Bridge)
		f.sysctls(ns, dev)
		f.ip(ns, "addr", "add", addr.String()+"/24", "dev", dev)
		f.ip(ns, "link", "set", dev, "mtu", mtu, "up")
		f.ip(f.Bridge, "link", "set", port, "mtu", mtu, "master", "br0", "up")
		if rateMbit > 0 {
			// Both ends: what the source sends (the data) and what it is sent.
			for _, end := range []struct{ ns, dev string }{{ns, dev}, {f.Bridge, port}} {
				run(t, "tc", "-n", end.ns, "qdisc", "add", "dev", end.dev, "root", "tbf",
					"rate", fmt.Sprintf("%dmbit", rateMbit), "burst", strconv.Itoa(burst(rateMbit, cfg.MTU)),
					"latency", fmt.Sprintf("%dms", cfg.QueueLatency.Milliseconds()))
			}
		}
	}
	plug(f.Source, f.SourceIf, "p-src", f.SourceAddr, cfg.SourceRateMbit)
	for i, n := range f.Nodes {
		plug(n.NS, n.If, fmt.Sprintf("p-n%d", i), n.Addr, 0)
	}
	return f
}

// TxBytes reads /sys/class/net/IF/statistics/tx_bytes inside namespace ns.
func (e *Env) TxBytes(ns, ifname string) (uint64, error) {
	return e.statistic(ns, ifname, "tx_bytes")
}
