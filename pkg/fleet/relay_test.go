package fleet_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"testing"

	"github.com/s3pd/s3pd/pkg/fleet"
	"github.com/s3pd/s3pd/pkg/s3emu"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// relayDataset: 5 MiB, enough objects that every node of six owns some
// and is a relay of some.
const relayDataset = "ds/f:48:64KiB,ds/big:4:512KiB"

// perObject is a front for a node's server that counts the object
// bytes it sends, by object and by the node that asked.
type perObject struct {
	h    http.Handler
	mu   sync.Mutex
	sent map[string]map[string]int64 // key -> asking node -> bytes
}

func (f *perObject) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	cw := &countWriter{ResponseWriter: w}
	f.h.ServeHTTP(cw, r)
	if r.URL.Path != fleet.ObjectPath || cw.status != http.StatusPartialContent || cw.n == 0 {
		return
	}
	key, asker := r.URL.Query().Get("key"), r.Header.Get(fleet.NodeHeader)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sent[key] == nil {
		f.sent[key] = map[string]int64{}
	}
	f.sent[key][asker] += cw.n
}

// askers are the nodes it sent bytes of the object named key to.
func (f *perObject) askers(key string) map[string]int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]int64{}
	for k, v := range f.sent[key] {
		out[k] = v
	}
	return out
}

// countWriter passes a response on, noting its status and body bytes.
type countWriter struct {
	http.ResponseWriter
	status int
	n      int64
}

func (c *countWriter) WriteHeader(code int) {
	if c.status == 0 {
		c.status = code
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *countWriter) Write(p []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	k, err := c.ResponseWriter.Write(p)
	c.n += int64(k)
	return k, err
}

func (c *countWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// orderOf is the object's order: its owner, then its backups.
func orderOf(w *world, key string, n int) []int {
	out := []int{w.shares.Owner(key)}
	for i := 1; i < n; i++ {
		out = append(out, w.shares.Backup(key, i))
	}
	return out
}

// countedNodes makes n nodes, each served through a perObject front.
func countedNodes(t *testing.T, n int) ([]*node, []*perObject) {
	t.Helper()
	fronts := make([]*perObject, n)
	nodes := newNodes(t, n, func(k int, s *fleet.Server) http.Handler {
		fronts[k] = &perObject{h: s, sent: map[string]map[string]int64{}}
		return fronts[k]
	})
	return nodes, fronts
}

// TestRelayTreeSpreadsEachObject: with four and six nodes, every node
// lands every object right and S3 sends the dataset about once, and
// each object moves down its tree: the node at position p of its order
// takes it from the one at (p-1)/FanOut alone, so that no node sends
// any object to more than FanOut nodes (the owner its share to exactly
// FanOut), and every node's upload stays about (N-1)/N of the dataset.
func TestRelayTreeSpreadsEachObject(t *testing.T) {
	for _, n := range []int{4, 6} {
		t.Run(fmt.Sprintf("%d nodes", n), func(t *testing.T) {
			w := newWorld(t, n, s3emu.Options{Dataset: relayDataset})
			nodes, fronts := countedNodes(t, n)
			runAll(t, w, nodes, fleet.SourceOptions{})
			s3 := w.fromS3()
			for _, nd := range nodes {
				nd.wantRan(t, w)
				w.wantLanded(t, nd.dir)
				if r := nd.src.Report(); len(r.Bypassed) != 0 {
					t.Errorf("node %d bypassed %+v, want none", nd.k, r.Bypassed)
				}
			}
			t.Logf("dataset %d bytes; S3 sent %d (%.3fx)", w.total, s3, float64(s3)/float64(w.total))
			if s3 < w.total || s3 > w.total*110/100 {
				t.Errorf("S3 sent %d bytes for a dataset of %d to %d nodes, want about 1x (at most 1.10x)", s3, w.total, n)
			}
			upload := make([]int64, n) // what each node's front counted
			for _, o := range w.objs {
				order := orderOf(w, o.Key, n)
				for p, k := range order {
					got := fronts[k].askers(o.Key)
					want := map[string]bool{}
					for c := p*fleet.FanOut + 1; c <= p*fleet.FanOut+fleet.FanOut && c < n; c++ {
						want[fmt.Sprint(order[c])] = true
					}
					for asker, b := range got {
						upload[k] += b
						if !want[asker] {
							t.Errorf("%s: node %d (position %d of %v) sent %d bytes to node %s, not its child in the tree", o.Key, k, p, order, b, asker)
						}
					}
					for asker := range want {
						if got[asker] < o.Size {
							t.Errorf("%s: node %d (position %d of %v) sent %d bytes to its child, node %s, want the object's %d", o.Key, k, p, order, got[asker], asker, o.Size)
						}
					}
					if len(got) > fleet.FanOut || p == 0 && len(got) != min(fleet.FanOut, n-1) {
						t.Errorf("%s: node %d (position %d) sent it to %d nodes, want at most %d (the owner exactly that)", o.Key, k, p, len(got), fleet.FanOut)
					}
				}
			}
			fair := w.total * int64(n-1) / int64(n)
			for k, nd := range nodes {
				var served int64
				for _, b := range nd.server.Served() {
					served += b
				}
				t.Logf("node %d uploaded %d bytes (%.2f of (N-1)/N of the dataset)", k, served, float64(served)/float64(fair))
				if served != upload[k] {
					t.Errorf("node %d: its server counted %d bytes sent, its front %d", k, served, upload[k])
				}
				if served < fair*6/10 || served > fair*14/10 {
					t.Errorf("node %d uploaded %d bytes, want about (N-1)/N of the dataset, %d (60%% to 140%%)", k, served, fair)
				}
			}
		})
	}
}

// TestRelayDeadFromTheStart: with four nodes, then six, and one dead
// from the start, every node takes each object from the nearest node
// above it in the object's tree that is alive (the objects the dead node
// was to relay go to its parent), the dead node's own share is split
// between the others, every other node lands everything right, and S3
// sends the dataset about once. No node sends an object to more than
// 2*FanOut-1 nodes (its own children and the dead one's), with four
// nodes to no more than FanOut.
func TestRelayDeadFromTheStart(t *testing.T) {
	for _, n := range []int{4, 6} {
		t.Run(fmt.Sprintf("%d nodes", n), func(t *testing.T) { testRelayDead(t, n, 1) })
	}
}

func testRelayDead(t *testing.T, n, dead int) {
	w := newWorld(t, n, s3emu.Options{Dataset: relayDataset})
	nodes, fronts := countedNodes(t, n)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nodes[dead].addr = l.Addr().String() // nothing answers there
	l.Close()
	peers := addrs(nodes)
	var wg sync.WaitGroup
	for _, nd := range nodes {
		if nd.k == dead {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			nd.run(t, w, peers, fleet.SourceOptions{}, nil)
		}()
	}
	wg.Wait()
	s3 := w.fromS3()
	for _, nd := range nodes {
		if nd.k == dead {
			continue
		}
		nd.wantRan(t, w)
		w.wantLanded(t, nd.dir)
		if r := nd.src.Report(); len(r.Bypassed) != 1 || r.Bypassed[0].Node != dead {
			t.Errorf("node %d bypassed %+v, want node %d only", nd.k, r.Bypassed, dead)
		}
	}
	t.Logf("dataset %d bytes; S3 sent %d (%.3fx)", w.total, s3, float64(s3)/float64(w.total))
	if s3 < w.total || s3 > w.total*110/100 {
		t.Errorf("S3 sent %d bytes for a dataset of %d, want about 1x (at most 1.10x)", s3, w.total)
	}
	most := 2*fleet.FanOut - 1
	if n == 4 {
		most = fleet.FanOut
	}
	relayed := 0 // objects whose relay was the dead node
	for _, o := range w.objs {
		order := orderOf(w, o.Key, n)
		for k, f := range fronts {
			if got := f.askers(o.Key); len(got) > most {
				t.Errorf("%s: node %d sent it to %v, want at most %d nodes", o.Key, k, got, most)
			}
		}
		for p, k := range order {
			if p == 0 || k == dead {
				continue
			}
			from := treeFrom(order, p, func(k int) bool { return k == dead })
			for s, f := range fronts {
				got := f.askers(o.Key)[fmt.Sprint(k)]
				switch {
				case s == from && got < o.Size:
					t.Errorf("%s: node %d (position %d of %v) took %d bytes from node %d, want the object's %d", o.Key, k, p, order, got, s, o.Size)
				case s != from && got > 0:
					t.Errorf("%s: node %d (position %d of %v) took %d bytes from node %d, want all from node %d", o.Key, k, p, order, got, s, from)
				}
			}
			if order[parent(p)] == dead && order[0] != dead {
				relayed++ // its parent is dead: it went to the grandparent
			}
		}
	}
	if relayed == 0 {
		t.Fatalf("no object has node %d as its relay: the dataset cannot test this", dead)
	}
}

func parent(p int) int { return (p - 1) / fleet.FanOut }

// treeFrom is the node that the node at position p of an object's
// order takes it from when the nodes gone() are gone: the nearest above
// it in the tree not gone, else, past a gone owner, the first node of
// the order not gone; -1 when that is itself (it fetches from S3).
func treeFrom(order []int, p int, gone func(int) bool) int {
	for q := parent(p); q > 0; q = parent(q) {
		if !gone(order[q]) {
			return order[q]
		}
	}
	for q, k := range order {
		if q == p {
			return -1
		}
		if !gone(k) {
			return k
		}
	}
	return -1
}

// TestListerPutsRelaysFirst: within a node's listing, every object it
// relays (it has children in the object's tree) comes before every
// object it only takes, after its own share.
func TestListerPutsRelaysFirst(t *testing.T) {
	const n = 6
	w := newWorld(t, n, s3emu.Options{Dataset: relayDataset})
	for self := range n {
		leaf, relays := false, 0
		w.shares.Lister(self).List(context.Background(), func(o transfer.Object) error {
			p := 0
			for i, k := range orderOf(w, o.Key, n) {
				if k == self {
					p = i
				}
			}
			relay := p*fleet.FanOut+1 < n
			if relay && p > 0 {
				relays++
			}
			if relay && leaf {
				t.Errorf("node %d: %s, which it relays (position %d), listed after one it only takes", self, o.Key, p)
			}
			leaf = leaf || !relay
			return nil
		})
		if relays == 0 {
			t.Errorf("node %d relays no object: the dataset cannot test this", self)
		}
	}
}
