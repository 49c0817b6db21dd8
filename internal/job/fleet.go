package job

import (
	"cmp"
	"context"
	"crypto/tls"
	"fmt"
	"strconv"
	"time"

	"github.com/s3pd/s3pd/pkg/fleet"
	"github.com/s3pd/s3pd/pkg/shard"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// FleetSpec is what --fleet asks of a download: that this node, one of
// a fleet that lands the same prefix, fetch its share from S3, serve
// what it verified to the other nodes and take their shares from them
// (pkg/fleet).
type FleetSpec struct {
	// Self is this node's index; Peers the fleet's servers by node
	// index, "host:port" each. Peers[Self] is the one address this
	// node's server binds.
	Self  int
	Peers []string
	// Token is the fleet's shared secret.
	Token string
	// ServerTLS, when set, serves peers over TLS; ClientTLS, when set,
	// asks peers over TLS, trusting its roots.
	ServerTLS, ClientTLS *tls.Config
	// Linger is how long a node that finished keeps serving at most,
	// waiting for every peer to say it finished too.
	Linger time.Duration
	// TrustPeers lets objects S3 gives nothing to verify against come
	// from peers, unverified (--fleet-trust-peers).
	TrustPeers bool
	// Lingering, when set, hears that the node's run ended and it
	// serves on for the peers named (by index), for Linger at most.
	Lingering func(waiting []int, max time.Duration)
}

// FleetReport is where one node's bytes came from and went.
type FleetReport struct {
	Node, Nodes int
	// FromSource and FromPeers are the object bytes read from S3 and
	// from peers; ToPeers those this node's server sent to peers.
	FromSource, FromPeers, ToPeers int64
	// Trusted is the objects taken from peers with nothing of S3's to
	// verify them by (TrustPeers).
	Trusted int64
	// Peers are the other nodes, in node order.
	Peers []FleetPeer
}

// FleetPeer is what one node did with one other.
type FleetPeer struct {
	Node int
	Addr string
	// From are the bytes taken from it, To those sent to it.
	From, To int64
	// Bypassed: dropped for the rest of the run, for Reason.
	Bypassed bool
	Reason   string
	// Done: it said it finished before this node stopped serving.
	Done bool
}

// fleetRun is a download's fleet: the split, the source that wraps the
// lanes, the server and what joins them to the engine.
type fleetRun struct {
	spec     FleetSpec
	server   *fleet.Server
	source   *fleet.Source
	observer *fleet.Observer
	notDone  []int
	lingered bool
}

// openFleet makes r's download a node of the fleet spec describes: it
// splits the listing into the nodes' shares (listing it now, with the
// rules' filter), lists this node's share first, wraps every lane in the
// fleet's source and starts the server on this node's own address.
func (r *Run) openFleet(ctx context.Context, spec FleetSpec, filter func(transfer.Object) bool) error {
	g := r.get
	dest, ok := g.Sink.(interface{ Destination(string) string })
	if g.dest == nil || !ok {
		return specErrorf("--fleet serves the files it landed: DEST must be a local directory")
	}
	if spec.Self < 0 || spec.Self >= len(spec.Peers) {
		return specErrorf("--fleet: node %d of %d peers", spec.Self, len(spec.Peers))
	}
	// The server first, so that peers find it as early as can be
	// (serving nothing until the engine writes). It holds a request for
	// a range it lacks for half the peers' stall at most, so that the
	// peer asking is not taken for a stalled one (every node runs with
	// the same --stall-timeout).
	stall := peerStall(r.Options.StallTimeout)
	srv, err := fleet.NewServer(fleet.ServerOptions{Token: spec.Token, TLS: spec.ServerTLS, Wait: min(fleet.DefaultWait, stall/2)})
	if err != nil {
		return &SpecError{Err: err}
	}
	// The node's own name may resolve (to this host) only a moment
	// after it started: a Kubernetes pod's, in its headless Service.
	if _, err := srv.StartWithin(ctx, spec.Peers[spec.Self], fleet.DefaultBindWait); err != nil {
		return &SpecError{Err: err}
	}
	built := false
	defer func() {
		if !built {
			srv.Close()
		}
	}()
	lister := cmp.Or[transfer.Lister](r.scaled.Lister, g.Source.Source)
	shares, err := fleet.SplitShares(ctx, lister, len(spec.Peers), shard.Options{Filter: filter})
	if err != nil {
		return err
	}
	src, err := fleet.NewSource(r.lanes[0].Source, fleet.SourceOptions{Self: spec.Self, Peers: spec.Peers, Token: spec.Token,
		Owner: shares.Owner, Backup: shares.Backup, TrustPeers: spec.TrustPeers, Client: fleet.NewClient(spec.ClientTLS),
		Stall: stall})
	if err != nil {
		return &SpecError{Err: err}
	}
	// Wait (a little) for the peers' servers, so that one that starts a
	// moment later is not bypassed for the whole run.
	fleet.AwaitPeers(ctx, spec.Self, spec.Peers, fleet.DefaultWaitReady)
	built = true
	r.lanes, r.scaled.Lister = src.Lanes(r.lanes), shares.Lister(spec.Self)
	obs := &fleet.Observer{Server: srv, Source: src, Path: func(o transfer.Object) string { return dest.Destination(o.Name) }}
	if w, ok := g.Sink.(interface{ Writing(string) string }); ok {
		// Parts are served from the partial file as they are written.
		obs.Writing = func(o transfer.Object) string { return w.Writing(o.Name) }
	}
	r.fleet = &fleetRun{spec: spec, server: srv, source: src, observer: obs}
	return nil
}

// peerStall is how long a peer may send nothing before it is bypassed:
// fleet.DefaultStall, or half the engine's StallTimeout when that is
// shorter. It must end first: a range the engine abandons for a stall
// is no fault of the peer's, which would then be asked again and again,
// never bypassed.
func peerStall(engine time.Duration) time.Duration {
	if engine > 0 && engine/2 < fleet.DefaultStall {
		return engine / 2
	}
	return fleet.DefaultStall
}

// linger is the fleet's step after this node's run: it tells the peers
// it finished and serves them until they all did, or Linger runs out.
func (f *fleetRun) linger(ctx context.Context) {
	if f.lingered {
		return
	}
	f.lingered = true
	o := fleet.LingerOptions{Self: f.spec.Self, Peers: f.spec.Peers, Token: f.spec.Token,
		Client: fleet.NewClient(f.spec.ClientTLS), Max: f.spec.Linger}
	if f.spec.Lingering != nil {
		done := f.server.Done()
		var waiting []int
		for i := range f.spec.Peers {
			if i != f.spec.Self && !done[strconv.Itoa(i)] {
				waiting = append(waiting, i)
			}
		}
		if len(waiting) > 0 && f.spec.Linger > 0 {
			f.spec.Lingering(waiting, f.spec.Linger)
		}
	}
	f.notDone = f.server.Linger(ctx, o)
}

// report is where the node's bytes came from and went so far.
func (f *fleetRun) report() *FleetReport {
	rep := f.source.Report()
	served := f.server.Served()
	done := f.server.Done()
	out := &FleetReport{Node: f.spec.Self, Nodes: len(f.spec.Peers), FromSource: rep.FromSource, Trusted: rep.TrustedObjects}
	bypassed := map[int]string{}
	for _, b := range rep.Bypassed {
		bypassed[b.Node] = b.Reason
	}
	for i, addr := range f.spec.Peers {
		if i == f.spec.Self {
			continue
		}
		why, gone := bypassed[i]
		p := FleetPeer{Node: i, Addr: addr, From: rep.FromPeers[addr], To: served[strconv.Itoa(i)],
			Bypassed: gone, Reason: why, Done: done[strconv.Itoa(i)]}
		out.FromPeers += p.From
		out.Peers = append(out.Peers, p)
	}
	for _, n := range served {
		out.ToPeers += n // every asker's, one outside the fleet's names too
	}
	return out
}

// close stops the server.
func (f *fleetRun) close() error {
	if err := f.server.Close(); err != nil {
		return fmt.Errorf("fleet server: %w", err)
	}
	return nil
}

// Lingered says this run is a fleet node's whose engine ran to its end
// uninterrupted, and which then lingered for its peers: an interruption
// after that ended the lingering, not the download.
func (r *Run) Lingered() bool { return r.fleet != nil && r.fleet.lingered }

// Fleet is where this node's bytes came from and went (nil without
// --fleet).
func (r *Run) Fleet() *FleetReport {
	if r.fleet == nil {
		return nil
	}
	return r.fleet.report()
}
