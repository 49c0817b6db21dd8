package netnstest

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/s3pd/s3pd/pkg/nics"
)

// streamServer writes bytes to every connection until it closes; it stops
// when the test ends.
func streamServer(t *testing.T, ln net.Listener) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		buf := make([]byte, 64<<10)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				for {
					if _, err := c.Write(buf); err != nil {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); wg.Wait() })
}

// TestRateCapsAndPolicyRouting streams through two capped links at once,
// each selected by its source address, and checks the caps hold and each
// link's rx counter carried its own stream.
func TestRateCapsAndPolicyRouting(t *testing.T) {
	e := New(t, Config{Links: []Link{{RateMbit: 200}, {RateMbit: 100}}})
	ln, err := e.Listen(e.Server, "tcp4", net.JoinHostPort(e.Service[0].String(), "0"))
	if err != nil {
		t.Fatalf("listen in server namespace: %v", err)
	}
	streamServer(t, ln)

	const dur = 1500 * time.Millisecond
	got := make([]int64, len(e.Links))
	before := make([]uint64, len(e.Links))
	for i, l := range e.Links {
		if before[i], err = e.RxBytes(e.Client, l.ClientIf); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, len(e.Links))
	for i, l := range e.Links {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: l.ClientAddr.AsSlice()}}
		c, err := e.DialContext(e.Client, d.DialContext)(context.Background(), "tcp4", ln.Addr().String())
		if err != nil {
			t.Fatalf("dial from %s: %v", l.ClientAddr, err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			c.SetReadDeadline(time.Now().Add(dur))
			got[i], errs[i] = io.Copy(io.Discard, c)
			if ne, ok := errs[i].(net.Error); ok && ne.Timeout() {
				errs[i] = nil
			}
		}()
	}
	wg.Wait()
	for i, l := range e.Links {
		if errs[i] != nil {
			t.Fatalf("read through %s: %v", l.ClientIf, errs[i])
		}
		after, err := e.RxBytes(e.Client, l.ClientIf)
		if err != nil {
			t.Fatal(err)
		}
		mbit := float64(got[i]) * 8 / dur.Seconds() / 1e6
		t.Logf("%s: %.0f Mbit/s under a %d Mbit/s cap, rx %d bytes for %d read", l.ClientIf, mbit, l.RateMbit, after-before[i], got[i])
		if mbit < 0.7*float64(l.RateMbit) || mbit > 1.2*float64(l.RateMbit) {
			t.Errorf("%s: got %.0f Mbit/s, want within 0.7-1.2x of the %d Mbit/s cap", l.ClientIf, mbit, l.RateMbit)
		}
		// Only this link's stream crossed it: its counter matches what was read.
		if rx := after - before[i]; rx < uint64(got[i]) || rx > uint64(float64(got[i])*1.1)+1<<20 {
			t.Errorf("%s: rx counter grew %d bytes, want about the %d read through it", l.ClientIf, rx, got[i])
		}
	}
}

// TestDiscoveryFlagsMissingPolicyRule runs nics discovery inside the client
// namespace, where nic2 has no policy rule.
func TestDiscoveryFlagsMissingPolicyRule(t *testing.T) {
	e := New(t, Config{Links: []Link{{}, {}, {NoPolicy: true}}})
	// A rule that looks in main but ignores its default route must not hide
	// the per-address rules behind it.
	e.ip(e.Client, "rule", "add", "priority", "500", "lookup", "main", "suppress_prefixlength", "0")
	var rep *nics.Report
	err := e.Do(e.Client, func() error {
		var err error
		rep, err = nics.Discover(context.Background(), nics.Options{})
		return err
	})
	if err != nil {
		t.Fatalf("discover in client namespace: %v", err)
	}
	byName := map[string]nics.Interface{}
	for _, i := range rep.Interfaces {
		byName[i.Name] = i
	}
	for k, l := range e.Links {
		i, ok := byName[l.ClientIf]
		if !ok || !i.Up || len(i.IPv4) != 1 || i.IPv4[0] != netip.PrefixFrom(l.ClientAddr, 24) {
			t.Fatalf("%s: got %+v, want it up with %s/24", l.ClientIf, i, l.ClientAddr)
		}
		if i.DefaultRoute != (k == 0) {
			t.Errorf("%s: got default route %v, want %v", l.ClientIf, i.DefaultRoute, k == 0)
		}
	}
	if rep.NICs != "nic0,nic1" {
		t.Errorf("suggested --nics: got %q, want nic0,nic1", rep.NICs)
	}
	var flagged []string
	for _, w := range rep.Warnings {
		if strings.Contains(w.Message, "no policy rule") {
			flagged = append(flagged, w.Interface)
			if !strings.Contains(w.Message, "leaves through nic0") ||
				!strings.Contains(w.Fix, "ip rule add from 198.18.2.2 lookup") ||
				!strings.Contains(w.Fix, "default via 198.18.2.1 dev nic2") {
				t.Errorf("warning: got %+v, want nic2 leaving through nic0 and a fix via 198.18.2.1", w)
			}
		}
	}
	if len(flagged) != 1 || flagged[0] != "nic2" {
		t.Errorf("policy warnings: got %v, want [nic2] (all: %+v)", flagged, rep.Warnings)
	}
	if r := byName["nic1"].Routes; len(r) != 1 || r[0].Rule != 1001 || r[0].Table != 101 || r[0].Via != "nic1" {
		t.Errorf("nic1 route: got %+v, want rule 1001 table 101 via nic1", r)
	}
}

// TestSpreadOverHostsAddresses runs this test binary inside the client
// namespace, where /etc/hosts maps one name to three server addresses, and
// checks that nics.SpreadDialer with the ordinary resolver reached each of
// them; then that the namespaces are gone once the test ends.
func TestSpreadOverHostsAddresses(t *testing.T) {
	var client, server string
	t.Run("env", func(t *testing.T) {
		e := New(t, Config{Links: []Link{{}}, ServiceAddrs: 3,
			Hosts: map[string][]netip.Addr{"s3.netnstest": {
				netip.MustParseAddr("198.19.0.1"), netip.MustParseAddr("198.19.0.2"), netip.MustParseAddr("198.19.0.3")}}})
		client, server = e.Client, e.Server
		var mu sync.Mutex
		counts := map[string]int{}
		accepted := make(chan struct{}, spreadDials) // one per connection counted
		port := "0"
		for _, a := range e.Service {
			ln, err := e.Listen(e.Server, "tcp4", net.JoinHostPort(a.String(), port))
			if err != nil {
				t.Fatalf("listen on %s: %v", a, err)
			}
			_, port, _ = net.SplitHostPort(ln.Addr().String())
			countAccepts(t, ln, &mu, counts, accepted)
		}
		self, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := e.Command(ctx, e.Client, self, "-test.run=^TestSpreadHelper$", "-test.v")
		cmd.Env = append(os.Environ(), "NETNSTEST_SPREAD_ADDR=s3.netnstest:"+port)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestSpreadHelper") {
			t.Fatalf("helper in the client namespace: %v:\n%s", err, out)
		}
		// The server side counts each connection as it accepts it,
		// perhaps after the helper exited: wait for them all (or 5 s).
		timeout := time.After(5 * time.Second)
	wait:
		for range spreadDials {
			select {
			case <-accepted:
			case <-timeout:
				break wait
			}
		}
		mu.Lock()
		defer mu.Unlock()
		for _, a := range e.Service {
			if n := counts[a.String()]; n != spreadDials/3 {
				t.Errorf("connections to %s: got %d, want %d (all: %v)", a, n, spreadDials/3, counts)
			}
		}
	})
	if client == "" {
		t.Skip("netnstest: namespaces unavailable (see the subtest)")
	}
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), client) || strings.Contains(string(out), server) {
		t.Errorf("namespaces left after the test: %s", out)
	}
	if _, err := os.Stat(filepath.Join("/etc/netns", client)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("/etc/netns/%s left after the test: %v", client, err)
	}
}

const spreadDials = 30

// TestSpreadHelper is run by TestSpreadOverHostsAddresses inside the client
// namespace; on its own it skips.
func TestSpreadHelper(t *testing.T) {
	addr := os.Getenv("NETNSTEST_SPREAD_ADDR")
	if addr == "" {
		t.Skip("helper for TestSpreadOverHostsAddresses")
	}
	d := nics.NewSpreadDialer(nil, 0, nil)
	for range spreadDials {
		c, err := d.DialContext(context.Background(), "tcp", addr)
		if err != nil {
			t.Fatalf("dial %s: %v", addr, err)
		}
		c.Close()
	}
	host, _, _ := net.SplitHostPort(addr)
	if got := d.Addrs(host); len(got) != 3 {
		t.Errorf("resolved %s: got %v, want 3 addresses", host, got)
	}
}

// countAccepts counts accepted connections by local address until the test
// ends, telling accepted of each (while it has room).
func countAccepts(t *testing.T, ln net.Listener, mu *sync.Mutex, counts map[string]int, accepted chan<- struct{}) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			counts[c.LocalAddr().(*net.TCPAddr).IP.String()]++
			mu.Unlock()
			select {
			case accepted <- struct{}{}:
			default: // more than were dialled: the counts say so
			}
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close(); wg.Wait() })
}
