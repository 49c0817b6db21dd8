package fleet_test

import (
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/s3pd/s3pd/pkg/fleet"
	"github.com/s3pd/s3pd/pkg/s3emu"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// TestFleetFetchesTheDatasetFromS3Once: three nodes at once each land
// every object, byte for byte and verified, while S3 sends the dataset
// about once in all (each node its own share), not three times: the
// rest moves between the nodes, as their reports and servers agree.
func TestFleetFetchesTheDatasetFromS3Once(t *testing.T) {
	const n = 3
	w := newWorld(t, n, s3emu.Options{})
	nodes := newNodes(t, n, noFront)
	runAll(t, w, nodes, fleet.SourceOptions{})
	s3 := w.fromS3() // before wantLanded reads the objects from S3
	var fromSource, fromPeers, served int64
	for _, nd := range nodes {
		nd.wantRan(t, w)
		w.wantLanded(t, nd.dir)
		r := nd.src.Report()
		if len(r.Bypassed) != 0 {
			t.Errorf("node %d bypassed %+v, want none", nd.k, r.Bypassed)
		}
		for _, peer := range nodes {
			if peer != nd && r.FromPeers[peer.addr] == 0 {
				t.Errorf("node %d took nothing from node %d, which owns %d bytes", nd.k, peer.k, w.shareBytes(peer.k))
			}
		}
		fromSource += r.FromSource
		for _, b := range r.FromPeers {
			fromPeers += b
		}
		for _, b := range nd.server.Served() {
			served += b
		}
	}
	t.Logf("dataset %d bytes; S3 sent %d, peers %d", w.total, s3, fromPeers)
	if s3 < w.total || s3 > w.total*5/4 {
		t.Errorf("S3 sent %d bytes for a dataset of %d to %d nodes, want about 1x (at most 1.25x)", s3, w.total, n)
	}
	if fromSource != s3 {
		t.Errorf("the nodes report %d bytes from S3, the emulator sent %d", fromSource, s3)
	}
	if fromPeers != served || fromPeers < (n-1)*w.total*3/4 {
		t.Errorf("peers sent %d bytes (servers counted %d), want the same, about %d", fromPeers, served, (n-1)*w.total)
	}
}

// cutAfter is a front for a peer that serves first requests whole,
// then breaks its next response off after a few bytes and from then on
// drops every connection without an answer, as a node that died mid-run.
type cutAfter struct {
	h     http.Handler
	first int64
	seen  atomic.Int64
	stop  func()
}

func (c *cutAfter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch i := c.seen.Add(1); {
	case i <= c.first:
		c.h.ServeHTTP(w, r)
	case i == c.first+1:
		c.h.ServeHTTP(&cutWriter{ResponseWriter: w, left: 1000}, r)
		go c.stop()
	default:
		panic(http.ErrAbortHandler) // stopping: no answer
	}
}

// cutWriter passes on at most left bytes of a body, then fails.
type cutWriter struct {
	http.ResponseWriter
	left int
}

func (c *cutWriter) Write(p []byte) (int, error) {
	if len(p) > c.left {
		k, _ := c.ResponseWriter.Write(p[:c.left])
		c.left = 0
		return k, errors.New("peer stopped")
	}
	c.left -= len(p)
	return c.ResponseWriter.Write(p)
}

// TestPeerStoppedMidRun: a peer that dies in the middle of a body and
// stops answering is bypassed and named; the rest of that range and of
// its share come from S3, and the run lands every object right.
func TestPeerStoppedMidRun(t *testing.T) {
	w := newWorld(t, 2, s3emu.Options{})
	var cut *cutAfter
	var stopped atomic.Bool
	nodes := newNodes(t, 2, func(k int, s *fleet.Server) http.Handler {
		if k == 1 {
			cut = &cutAfter{h: s, first: 2}
			return cut
		}
		return nil
	})
	cut.stop = func() { stopped.Store(true) }
	a, b := nodes[0], nodes[1]
	b.run(t, w, addrs(nodes), fleet.SourceOptions{}, ownShare(w, 1))
	if b.err != nil || b.sum.Failed != 0 {
		t.Fatalf("node 1's own share: %+v, %v", b.sum, b.err)
	}
	a.run(t, w, addrs(nodes), fleet.SourceOptions{}, nil)
	a.wantRan(t, w)
	w.wantLanded(t, a.dir)
	r := a.src.Report()
	if len(r.Bypassed) != 1 || r.Bypassed[0].Node != 1 || r.Bypassed[0].Peer != b.addr || r.Bypassed[0].Reason == "" {
		t.Fatalf("bypassed %+v, want node 1 (%s) with a reason", r.Bypassed, b.addr)
	}
	if !stopped.Load() || r.FromPeers[b.addr] == 0 {
		t.Errorf("peer stopped %v after sending %d bytes, want stopped after sending some", stopped.Load(), r.FromPeers[b.addr])
	}
	if got := r.FromSource + r.FromPeers[b.addr]; got < w.total {
		t.Errorf("node 0 read %d bytes from S3 and its peer, want at least the dataset's %d", got, w.total)
	}
	t.Logf("bypassed: %s", r.Bypassed[0].Reason)
}

// flipper is a front for a peer that flips one byte of every body.
type flipper struct{ h http.Handler }

func (f flipper) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.h.ServeHTTP(&flipWriter{ResponseWriter: w}, r)
}

type flipWriter struct {
	http.ResponseWriter
	done bool
}

func (f *flipWriter) Write(p []byte) (int, error) {
	if !f.done && len(p) > 0 {
		f.done = true
		q := append([]byte(nil), p...)
		q[len(q)/2] ^= 0x01
		return f.ResponseWriter.Write(q)
	}
	return f.ResponseWriter.Write(p)
}

// TestPeerFlippingBytesIsCaught: a peer that sends wrong bytes (right
// ranges, right ETag) is caught by the engine's check against S3's
// checksum: the object is fetched again from S3, the peer is named and
// dropped, and every final name holds S3's bytes.
func TestPeerFlippingBytesIsCaught(t *testing.T) {
	w := newWorld(t, 2, s3emu.Options{})
	nodes := newNodes(t, 2, func(k int, s *fleet.Server) http.Handler {
		if k == 1 {
			return flipper{s}
		}
		return nil
	})
	a, b := nodes[0], nodes[1]
	b.run(t, w, addrs(nodes), fleet.SourceOptions{}, ownShare(w, 1))
	if b.err != nil || b.sum.Failed != 0 {
		t.Fatalf("node 1's own share: %+v, %v", b.sum, b.err)
	}
	a.run(t, w, addrs(nodes), fleet.SourceOptions{}, nil)
	a.wantRan(t, w)
	w.wantLanded(t, a.dir)
	r := a.src.Report()
	if len(r.Bypassed) != 1 || r.Bypassed[0].Node != 1 || !strings.Contains(r.Bypassed[0].Reason, "checksum") {
		t.Fatalf("bypassed %+v, want node 1, for a checksum", r.Bypassed)
	}
	if a.sum.Retries == 0 || r.FromSource < w.total {
		t.Errorf("%d retries, %d bytes from S3; want a refetch, and the whole dataset from S3 (the peer's bytes were all wrong)", a.sum.Retries, r.FromSource)
	}
	t.Logf("bypassed: %s", r.Bypassed[0].Reason)
}

// asked counts the requests a peer's server receives.
type asked struct {
	h http.Handler
	n atomic.Int64
}

func (a *asked) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.n.Add(1)
	a.h.ServeHTTP(w, r)
}

// TestPeerWithoutTheObjectIsWaitedForThenS3: a peer that does not get
// its share in time (it holds nothing) is asked again until WaitReady,
// then its objects come from S3; it stays in the fleet.
func TestPeerWithoutTheObjectIsWaitedForThenS3(t *testing.T) {
	w := newWorld(t, 2, s3emu.Options{})
	var front *asked
	nodes := newNodes(t, 2, func(k int, s *fleet.Server) http.Handler {
		if k == 1 {
			front = &asked{h: s}
			return front
		}
		return nil
	})
	a := nodes[0]
	const wait = 300 * time.Millisecond
	t0 := time.Now()
	a.run(t, w, addrs(nodes), fleet.SourceOptions{WaitReady: wait, Poll: 20 * time.Millisecond}, nil)
	a.wantRan(t, w)
	w.wantLanded(t, a.dir)
	r := a.src.Report()
	if len(r.Bypassed) != 0 || len(r.FromPeers) != 0 || r.FromSource != w.total {
		t.Errorf("bypassed %+v, from peers %v, from S3 %d; want no bypass, all %d bytes from S3", r.Bypassed, r.FromPeers, r.FromSource, w.total)
	}
	if front.n.Load() < 2 || time.Since(t0) < wait {
		t.Errorf("the peer was asked %d times in %v, want asked again, for at least %v", front.n.Load(), time.Since(t0), wait)
	}
}

// TestSourceRefusesIncompleteOptions: a Source needs a token, an owner
// rule and its own place among the peers.
func TestSourceRefusesIncompleteOptions(t *testing.T) {
	owner := func(string) int { return 0 }
	for _, tt := range []struct {
		name string
		opts fleet.SourceOptions
	}{
		{"no token", fleet.SourceOptions{Peers: []string{"a:1"}, Owner: owner}},
		{"no owner", fleet.SourceOptions{Peers: []string{"a:1"}, Token: token}},
		{"self past the peers", fleet.SourceOptions{Self: 2, Peers: []string{"a:1", "b:1"}, Token: token, Owner: owner}},
	} {
		if _, err := fleet.NewSource(nil, tt.opts); err == nil {
			t.Errorf("%s: no error", tt.name)
		}
	}
}

// TestPeerRefusingTheTokenIsBypassed: a node with another token gets
// 403 and not a byte from its peer, names it, and takes its share from
// S3.
func TestPeerRefusingTheTokenIsBypassed(t *testing.T) {
	w := newWorld(t, 2, s3emu.Options{})
	nodes := newNodes(t, 2, noFront)
	a, b := nodes[0], nodes[1]
	b.run(t, w, addrs(nodes), fleet.SourceOptions{}, ownShare(w, 1))
	if b.err != nil || b.sum.Failed != 0 {
		t.Fatalf("node 1's own share: %+v, %v", b.sum, b.err)
	}
	a.run(t, w, addrs(nodes), fleet.SourceOptions{Token: "not-the-fleet's"}, nil)
	a.wantRan(t, w)
	w.wantLanded(t, a.dir)
	r := a.src.Report()
	if len(r.Bypassed) != 1 || r.Bypassed[0].Node != 1 || !strings.Contains(r.Bypassed[0].Reason, "403") {
		t.Errorf("bypassed %+v, want node 1, for a 403", r.Bypassed)
	}
	if len(r.FromPeers) != 0 || len(b.server.Served()) != 0 || r.FromSource != w.total {
		t.Errorf("from peers %v (served %v), from S3 %d; want nothing from the peer, %d from S3", r.FromPeers, b.server.Served(), r.FromSource, w.total)
	}
}

// TestDeadNodesShareIsSplitBetweenTheOthers: with four nodes and one
// dead from the start, every other node lands every object right, and
// the dead node's share is fetched from S3 about once in all, each of
// the three others fetching its part of it (its backups' split), not
// each all of it.
func TestDeadNodesShareIsSplitBetweenTheOthers(t *testing.T) {
	const n, dead = 4, 3
	w := newWorld(t, n, s3emu.Options{Dataset: "ds/f:48:64KiB,ds/big:4:512KiB"})
	nodes := newNodes(t, n, noFront)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nodes[dead].addr = l.Addr().String() // nothing answers there
	l.Close()
	peers := addrs(nodes)
	var wg sync.WaitGroup
	for _, nd := range nodes[:dead] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nd.run(t, w, peers, fleet.SourceOptions{}, nil)
		}()
	}
	wg.Wait()
	s3 := w.fromS3()
	share := w.shareBytes(dead)
	for _, nd := range nodes[:dead] {
		nd.wantRan(t, w)
		w.wantLanded(t, nd.dir)
		r := nd.src.Report()
		if len(r.Bypassed) != 1 || r.Bypassed[0].Node != dead {
			t.Fatalf("node %d bypassed %+v, want node %d only", nd.k, r.Bypassed, dead)
		}
		// The reason is short: the peer and what happened, not the
		// request's URL.
		if why := r.Bypassed[0].Reason; !strings.HasPrefix(why, "peer "+nodes[dead].addr+": ") || strings.Contains(why, fleet.ObjectPath) || strings.Contains(why, "Get ") {
			t.Errorf("node %d: reason %q, want the peer's address and what happened, no URL", nd.k, why)
		}
		inherited := r.FromSource - w.shareBytes(nd.k)
		t.Logf("node %d fetched %d bytes of the dead share's %d from S3 (%.0f%%)", nd.k, inherited, share, 100*float64(inherited)/float64(share))
		if inherited < share*15/100 || inherited > share*55/100 {
			t.Errorf("node %d fetched %d bytes of the dead node's %d from S3, want 15%% to 55%% of them", nd.k, inherited, share)
		}
	}
	t.Logf("dataset %d bytes; S3 sent %d", w.total, s3)
	if s3 < w.total || s3 > w.total*110/100 {
		t.Errorf("S3 sent %d bytes for a dataset of %d, want about 1x (at most 1.10x)", s3, w.total)
	}
}

// refusing is a front for a peer that refuses one node's requests (as
// if that node had the wrong token) and serves the others.
type refusing struct {
	h    http.Handler
	node string
}

func (f refusing) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get(fleet.NodeHeader) == f.node {
		w.WriteHeader(http.StatusForbidden)
		return
	}
	f.h.ServeHTTP(w, r)
}

// TestPiecesFromPeersAreServedOnward: what a node took from a peer it
// serves onward as it serves its own share. Node 1 refuses node 2; node
// 0 took node 1's share from node 1; node 2, having bypassed node 1,
// takes the objects of node 1's share whose first backup is node 0 from
// node 0, which did not own them.
func TestPiecesFromPeersAreServedOnward(t *testing.T) {
	w := newWorld(t, 3, s3emu.Options{Dataset: "ds/f:24:64KiB,ds/big:6:256KiB"})
	nodes := newNodes(t, 3, func(k int, s *fleet.Server) http.Handler {
		if k == 1 {
			return refusing{h: s, node: "2"}
		}
		return nil
	})
	a, b, c := nodes[0], nodes[1], nodes[2]
	b.run(t, w, addrs(nodes), fleet.SourceOptions{}, ownShare(w, 1))
	if b.err != nil || b.sum.Failed != 0 {
		t.Fatalf("node 1's own share: %+v, %v", b.sum, b.err)
	}
	notTwo := func(o transfer.Object) bool { return w.shares.Owner(o.Key) != 2 }
	a.run(t, w, addrs(nodes), fleet.SourceOptions{}, notTwo)
	if a.err != nil || a.sum.Failed != 0 || a.src.Report().FromPeers[b.addr] != w.shareBytes(1) {
		t.Fatalf("node 0: %+v, %v, report %+v; want node 1's share from node 1", a.sum, a.err, a.src.Report())
	}
	var onward int64 // node 1's objects that node 2 asks node 0 for
	for _, o := range w.objs {
		if w.shares.Owner(o.Key) == 1 && w.shares.Backup(o.Key, 1) == 0 {
			onward += o.Size
		}
	}
	if onward == 0 {
		t.Fatal("no object of node 1's share has node 0 as its first backup: the dataset cannot test this")
	}
	c.run(t, w, addrs(nodes), fleet.SourceOptions{}, nil)
	c.wantRan(t, w)
	w.wantLanded(t, c.dir)
	r := c.src.Report()
	if len(r.Bypassed) != 1 || r.Bypassed[0].Node != 1 {
		t.Fatalf("node 2 bypassed %+v, want node 1 only", r.Bypassed)
	}
	served := a.server.Served()["2"]
	t.Logf("node 0 served node 2 %d bytes: its share's %d and %d of node 1's", served, w.shareBytes(0), onward)
	if served != w.shareBytes(0)+onward || r.FromPeers[a.addr] != served {
		t.Errorf("node 0 served node 2 %d bytes, node 2 took %d from it; want its share's %d and the %d of node 1's it got from node 1",
			served, r.FromPeers[a.addr], w.shareBytes(0), onward)
	}
}
