//go:build netns

package netnstest

import (
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/s3pd/s3pd/pkg/fleet"
)

// TestFleet runs `get --fleet K/N` on four nodes of a bridge whose one
// way to the emulator is a 200 Mbit/s link: the fleet fetches the
// prefix from S3 about once in all and every node lands all of it; a
// node killed mid-run, or a peer whose bytes are flipped on the way,
// costs the others nothing but S3 bytes; a request without the fleet's
// token is refused.
func TestFleet(t *testing.T) {
	fe := newFleetEnv(t, 4, 200, "fleet:16:2MiB")
	dataset := fe.data.Bytes()
	peers := fe.peerList()
	all := func(runs []*nodeRun) []int {
		var n []int
		for _, r := range runs {
			n = append(n, r.node)
		}
		return n
	}
	// landed checks that each of the runs exited 0 with every object
	// landed byte for byte, and returns their summaries.
	landed := func(t *testing.T, runs []*nodeRun, which []int) map[int]fleetSummary {
		t.Helper()
		sums := map[int]fleetSummary{}
		for _, i := range which {
			r := runs[i]
			if code := r.exitCode(); code != 0 {
				t.Errorf("node %d: exit %d, want 0\n%s", i, code, r)
				continue
			}
			if err := fe.checkLanded(r.dest); err != nil {
				t.Errorf("node %d: %v", i, err)
			}
			if bad := r.unverified(); len(bad) > 0 {
				t.Errorf("node %d: objects not verified: %s", i, strings.Join(bad, ", "))
			}
			s, err := r.summary()
			if err != nil {
				t.Errorf("%v\n%s", err, r)
				continue
			}
			sums[i] = s
		}
		return sums
	}

	t.Run("bytes from S3 once, every node byte-exact", func(t *testing.T) {
		fe.emu.ResetStats()
		wire0, err := fe.TxBytes(fe.Source, fe.SourceIf)
		if err != nil {
			t.Fatal(err)
		}
		runs := fe.startGets(t, dests(t, t.TempDir(), 4), func(i int) []string { return fe.fleetArgs(i, peers, time.Minute) })
		waitRuns(t, runs, 3*time.Minute)
		sent := fe.emu.Stats().BytesSent
		wire, err := fe.TxBytes(fe.Source, fe.SourceIf)
		if err != nil {
			t.Fatal(err)
		}
		// Counted again on the wire: headers and TCP/IP framing included.
		if wire -= wire0; float64(wire) > 1.05*float64(dataset) {
			t.Errorf("the source's link carried %d bytes out, %.3fx the %d-byte dataset: want at most 1.05x", wire, float64(wire)/float64(dataset), dataset)
		}
		sums := landed(t, runs, all(runs))
		t.Logf("the emulator sent %d bytes for a %d-byte dataset (%.3fx), its link %d (%.3fx)", sent, dataset, float64(sent)/float64(dataset), wire, float64(wire)/float64(dataset))
		// The emulator counts what its handlers wrote into sockets: a
		// hedged request the node gave up on may have written a few MiB
		// that the kernel threw away when the connection closed, and
		// that never crossed the link. A generous bound on that count;
		// the link's own (above) is the 1.05x.
		if float64(sent) > 1.15*float64(dataset) {
			t.Errorf("the emulator sent %d bytes, %.3fx the %d-byte dataset: want at most 1.15x", sent, float64(sent)/float64(dataset), dataset)
		}
		var fromSource, fromPeers, toPeers int64
		for i, s := range sums {
			t.Logf("node %d: from source %d, from peers %d, to peers %d, in %v; %d requests, %d retries, %d hedged, %d splits",
				i, s.FromSource, s.FromPeers, s.ToPeers, runs[i].took.Round(time.Millisecond), s.Requests, s.Retries, s.Hedged, s.Splits)
			if s.FleetNode == nil || *s.FleetNode != i || s.FleetNodes != 4 {
				t.Errorf("node %d: summary says node %v of %d", i, s.FleetNode, s.FleetNodes)
			}
			if s.FromSource+s.FromPeers < dataset {
				t.Errorf("node %d: %d bytes from the source and %d from peers, less than the %d landed", i, s.FromSource, s.FromPeers, dataset)
			}
			for _, p := range s.Peers {
				if p.Bypassed {
					t.Errorf("node %d: peer %d (%s) bypassed with no fault: %s", i, p.Node, p.Addr, p.Reason)
				}
			}
			fromSource += s.FromSource
			fromPeers += s.FromPeers
			toPeers += s.ToPeers
		}
		// What the nodes say they took from the source is what it sent,
		// less the listings.
		if fromSource > sent || float64(fromSource) < 0.95*float64(dataset) {
			t.Errorf("the nodes report %d bytes from the source in all; the emulator sent %d for a %d-byte dataset", fromSource, sent, dataset)
		}
		// Every byte one node took from a peer, a peer served.
		if toPeers < fromPeers {
			t.Errorf("the nodes served %d bytes to peers in all, less than the %d they took from peers", toPeers, fromPeers)
		}
	})

	t.Run("a node killed at 30 percent: the others land it all", func(t *testing.T) {
		const victim = 3
		runs := fe.startGets(t, dests(t, t.TempDir(), 4), func(i int) []string { return fe.fleetArgs(i, peers, 3*time.Second) })
		node := fe.Nodes[victim]
		base, err := fe.RxBytes(node.NS, node.If)
		if err != nil {
			t.Fatal(err)
		}
		killed := false
		for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline) && !killed; {
			select {
			case <-runs[victim].done:
				t.Fatalf("node %d finished before it was killed at 30 %% of its progress:\n%s", victim, runs[victim])
			case <-time.After(20 * time.Millisecond):
			}
			rx, err := fe.RxBytes(node.NS, node.If)
			if err != nil {
				t.Fatal(err)
			}
			if rx-base >= uint64(dataset)*3/10 {
				if err := runs[victim].kill(); err != nil {
					t.Fatalf("kill node %d: %v", victim, err)
				}
				t.Logf("node %d killed after receiving %d bytes (%.0f %% of the dataset)", victim, rx-base, 100*float64(rx-base)/float64(dataset))
				killed = true
			}
		}
		if !killed {
			t.Fatalf("node %d never reached 30 %% of the dataset", victim)
		}
		waitRuns(t, runs, 3*time.Minute)
		if code := runs[victim].exitCode(); code != -1 {
			t.Errorf("node %d: exit %d, want its death by SIGKILL", victim, code)
		}
		sums := landed(t, runs, []int{0, 1, 2})
		for i, s := range sums {
			for _, p := range s.Peers {
				if p.Node == victim {
					t.Logf("node %d on the killed node: %+v", i, p)
				} else if p.Bypassed {
					t.Errorf("node %d: live peer %d bypassed: %s", i, p.Node, p.Reason)
				}
			}
		}
	})

	t.Run("a peer whose bytes are flipped is caught and named", func(t *testing.T) {
		const liar = 1
		// The others know node 1 by the proxy's address, on the bridge;
		// node 1 itself listens on its own.
		px := startFlipProxy(t, fe, fe.peerAddr(liar))
		lying := strings.Replace(peers, fe.peerAddr(liar), px.addr, 1)
		runs := fe.startGets(t, dests(t, t.TempDir(), 4), func(i int) []string {
			if i == liar {
				return fe.fleetArgs(i, peers, 3*time.Second)
			}
			return fe.fleetArgs(i, lying, 3*time.Second)
		})
		waitRuns(t, runs, 3*time.Minute)
		sums := landed(t, runs, all(runs))
		if px.flipped.Load() == 0 {
			t.Fatalf("the proxy flipped no byte: nothing asked node %d for an object through it", liar)
		}
		t.Logf("the proxy flipped a byte of %d responses", px.flipped.Load())
		for i, s := range sums {
			if i == liar {
				continue
			}
			named := false
			for _, p := range s.Peers {
				switch {
				case p.Node == liar:
					named = p.Bypassed && p.Reason != "" && p.Addr == px.addr
					t.Logf("node %d on node %d: %+v", i, liar, p)
				case p.Bypassed:
					t.Errorf("node %d: honest peer %d bypassed: %s", i, p.Node, p.Reason)
				}
			}
			if !named {
				t.Errorf("node %d: its summary does not name node %d at %s bypassed with a reason: %+v", i, liar, px.addr, s.Peers)
			}
		}
	})

	t.Run("a request without the token is refused", func(t *testing.T) {
		// Node 0 of a fleet of two whose node 1 never comes: it lands
		// everything (node 1's share from S3) and lingers for node 1.
		pair := fe.peerAddr(0) + "," + fe.peerAddr(1)
		runs := fe.startGets(t, dests(t, t.TempDir(), 1), func(int) []string {
			return []string{"--fleet", "0/2", "--peers", pair, "--fleet-linger", "2m"}
		})
		client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			DialContext: fe.DialContext(fe.Bridge, (&net.Dialer{}).DialContext), DisableKeepAlives: true}}
		key := fe.data.Groups[0].Key(0)
		get := func(token string) (*http.Response, []byte, error) {
			req, _ := http.NewRequest(http.MethodGet, "http://"+fe.peerAddr(0)+fleet.ObjectPath+"?key="+url.QueryEscape(key), nil)
			if token != "" {
				req.Header.Set(fleet.TokenHeader, token)
			}
			resp, err := client.Do(req)
			if err != nil {
				return nil, nil, err
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			return resp, body, err
		}
		// With the token, once node 0 landed the object, it serves it.
		var resp *http.Response
		var body []byte
		for deadline := time.Now().Add(2 * time.Minute); ; {
			var err error
			resp, body, err = get(fleetToken)
			if err == nil && resp.StatusCode == http.StatusOK {
				break
			}
			if time.Now().After(deadline) {
				runs[0].kill() // stopped before its output is read
				<-runs[0].done
				t.Fatalf("node 0 never served %s with the token: %v %v\n%s", key, resp, err, runs[0])
			}
			select {
			case <-runs[0].done:
				t.Fatalf("node 0 exited while it should linger:\n%s", runs[0])
			case <-time.After(50 * time.Millisecond):
			}
		}
		if int64(len(body)) != fe.data.Groups[0].Size {
			t.Errorf("with the token: %d bytes of %s, want %d", len(body), key, fe.data.Groups[0].Size)
		}
		for _, token := range []string{"", "not-" + fleetToken} {
			resp, body, err := get(token)
			if err != nil {
				t.Fatalf("token %q: %v", token, err)
			}
			if resp.StatusCode != http.StatusForbidden || len(body) != 0 {
				t.Errorf("token %q: got %d with %d bytes of body, want 403 with none", token, resp.StatusCode, len(body))
			}
		}
		// Node 1 says it is done: node 0 stops lingering and exits 0.
		req, _ := http.NewRequest(http.MethodPost, "http://"+fe.peerAddr(0)+"/fleet/v1/done", nil)
		req.Header.Set(fleet.TokenHeader, fleetToken)
		req.Header.Set(fleet.NodeHeader, strconv.Itoa(1))
		if resp, err := client.Do(req); err != nil || resp.StatusCode/100 != 2 {
			t.Fatalf("POST done as node 1: %v %v", resp, err)
		}
		select {
		case <-runs[0].done:
		case <-time.After(30 * time.Second):
			t.Fatalf("node 0 still lingers 30 s after its only peer said done")
		}
		landed(t, runs, []int{0})
	})
}

// flipProxy stands at a node's advertised address, on the bridge, and
// passes what the real node serves with the first byte of every body
// flipped.
type flipProxy struct {
	addr    string
	flipped atomic.Int64
}

func startFlipProxy(t *testing.T, fe *fleetEnv, target string) *flipProxy {
	t.Helper()
	ln, err := fe.Listen(fe.Bridge, "tcp4", net.JoinHostPort(fe.BridgeAddr.String(), strconv.Itoa(fleetPort)))
	if err != nil {
		t.Fatal(err)
	}
	px := &flipProxy{addr: ln.Addr().String()}
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: target})
	rp.Transport = &http.Transport{DialContext: fe.DialContext(fe.Bridge, (&net.Dialer{}).DialContext)}
	rp.ModifyResponse = func(resp *http.Response) error {
		if resp.Request.Method == http.MethodGet && resp.StatusCode/100 == 2 && resp.ContentLength != 0 {
			resp.Body = &flipFirst{ReadCloser: resp.Body, px: px}
		}
		return nil
	}
	hs := &http.Server{Handler: rp, ReadHeaderTimeout: time.Minute}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return px
}

// flipFirst flips the first byte read through it.
type flipFirst struct {
	io.ReadCloser
	px   *flipProxy
	done bool
}

func (f *flipFirst) Read(p []byte) (int, error) {
	n, err := f.ReadCloser.Read(p)
	if n > 0 && !f.done {
		p[0] ^= 0xff
		f.done = true
		f.px.flipped.Add(1)
	}
	return n, err
}
