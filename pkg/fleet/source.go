package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// Defaults of SourceOptions.
const (
	DefaultStall     = 5 * time.Second
	DefaultWaitReady = 10 * time.Second
	DefaultPoll      = 50 * time.Millisecond
	maxPoll          = time.Second
)

// SourceOptions configure a Source.
type SourceOptions struct {
	// Self is this node's index in the fleet (K of --fleet K/N).
	Self int
	// Peers are the fleet's servers by node index, "host:port" each;
	// Peers[Self] is this node's own and never asked.
	Peers []string
	// Token is the fleet's shared secret, sent with every request.
	Token string
	// Owner returns the node whose share the object named key is (see
	// Shares.Owner), -1 when none is known: such an object comes from
	// the wrapped source.
	Owner func(key string) int
	// Backup returns, for i = 1, 2, ..., the nodes after the object's
	// owner in its order, the same on every node (see Shares.Backup);
	// -1 past the last. The order is a tree (FanOut): the node at
	// position i asks the one at (i-1)/FanOut, else the nearest node not
	// bypassed above it in the tree; when that chain reaches a bypassed
	// owner, the first node of the order not bypassed stands in for the
	// owner, and when that is this node, the object comes from the
	// wrapped source (and this node then serves it). nil: every node
	// asks the owner, and an object whose owner is bypassed comes from
	// the wrapped source.
	Backup func(key string, i int) int
	// TrustPeers lets objects that S3 gives nothing to verify against
	// (no CRC, and an ETag that is no MD5 of the bytes: SSE-KMS, SSE-C)
	// come from peers, unverified; Report counts them. Without it they
	// come from the wrapped source only.
	TrustPeers bool
	// Client sends the requests to peers (default: a client of its own
	// transport, so peers' connections never mix with the source's).
	Client *http.Client
	// Stall: a peer that sends no byte of a response (its headers, or
	// its next body bytes) for this long is bypassed and the rest of
	// the range comes from the wrapped source (default DefaultStall).
	// Keep it under the engine's StallTimeout.
	Stall time.Duration
	// WaitReady bounds how long an object is waited for at a peer that
	// does not hold it yet (404), from the first request that found it
	// missing; after that the object comes from the wrapped source and
	// the peer stays in the fleet (default DefaultWaitReady).
	WaitReady time.Duration
	// Poll is the first pause between two asks of a peer that does not
	// hold an object yet; it doubles up to a second (default DefaultPoll).
	Poll time.Duration
}

func (o SourceOptions) withDefaults() SourceOptions {
	if o.Stall <= 0 {
		o.Stall = DefaultStall
	}
	if o.WaitReady <= 0 {
		o.WaitReady = DefaultWaitReady
	}
	if o.Poll <= 0 {
		o.Poll = DefaultPoll
	}
	if o.Client == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.Proxy = nil // peers are on the fleet's own network
		o.Client = &http.Client{Transport: tr}
	}
	return o
}

// Source is a transfer.Source that takes the objects of other nodes'
// shares from those nodes (their Server) and everything else, and every
// byte a peer cannot give, from the source it wraps (S3). It is also a
// transfer.Checksummer, through the wrapped source: the checksums it
// hands the engine are always the wrapped source's, never a peer's.
// The Sources of one node's lanes share one state (For).
type Source struct {
	transfer.Source // the wrapped source: S3 over one lane
	sh              *shared
}

// shared is the state of one node's fleet, common to its lanes.
type shared struct {
	opts       SourceOptions
	peers      []*peer
	fromSource atomic.Int64
	trusted    atomic.Int64 // objects taken from peers unverified (TrustPeers)

	mu   sync.Mutex
	objs map[string]*objState // by key, until Done
}

// objState is what the Source knows of one object during the run.
type objState struct {
	look  *lookup // the checksum lookup, nil until asked or after one failed
	probe *lookup // whether S3 keeps it encrypted, nil until asked or after one failed
	// s3only: the object comes from the wrapped source only (its bytes
	// failed their checksum, or S3 has nothing to check a peer's with)
	s3only bool
	// trusted: peers may send it with nothing to check it by
	// (TrustPeers); counted: it was counted so in the Report
	trusted, counted bool
	// served are the peers that sent some of its bytes in this attempt
	served []int
	// waitUntil: when a peer that lacks it stops being waited for
	waitUntil time.Time
}

// NewSource wraps src, the S3 source of one lane, in the fleet that
// opts describe.
func NewSource(src transfer.Source, opts SourceOptions) (*Source, error) {
	switch {
	case opts.Token == "":
		return nil, errors.New("fleet source: empty token")
	case opts.Self < 0 || opts.Self >= len(opts.Peers):
		return nil, fmt.Errorf("fleet source: node %d of %d peers", opts.Self, len(opts.Peers))
	case opts.Owner == nil:
		return nil, errors.New("fleet source: no owner of the objects")
	}
	opts = opts.withDefaults()
	sh := &shared{opts: opts, objs: map[string]*objState{}}
	for i, addr := range opts.Peers {
		sh.peers = append(sh.peers, &peer{i: i, addr: addr, sh: sh})
	}
	return &Source{Source: src, sh: sh}, nil
}

// For returns the same fleet over src, another lane's S3 source: the
// lanes share the peers, what was bypassed and the report.
func (s *Source) For(src transfer.Source) *Source { return &Source{Source: src, sh: s.sh} }

// Lanes wraps every lane's source in the fleet of s.
func (s *Source) Lanes(lanes []transfer.Lane) []transfer.Lane {
	out := make([]transfer.Lane, len(lanes))
	for i, l := range lanes {
		out[i] = transfer.Lane{Name: l.Name, Source: s.For(l.Source)}
	}
	return out
}

// Open implements transfer.Source: bytes [off, off+n) of obj from the
// peer that owns it when it may, else (and for whatever the peer fails
// to send) from the wrapped source.
func (s *Source) Open(ctx context.Context, obj *transfer.Object, off, n int64) (*transfer.Body, error) {
	span := n // what a peer is asked for: the bytes to the end when n < 0
	if n < 0 || off+n > obj.Size {
		span = obj.Size - off
	}
	for range len(s.sh.peers) {
		p, hand := s.route(ctx, obj, off, span)
		if p == nil {
			break
		}
		b, err := p.open(ctx, s, obj, off, span, hand)
		if b != nil || err != nil {
			return b, err
		}
		if !p.isBypassed() {
			break // not held in time, or another version: S3's
		}
		// The peer failed and was dropped: the next in the object's
		// order stands in for it.
	}
	// n as the engine gave it: S3's whole-object GET (n < 0) carries the
	// object's checksums, a ranged one does not.
	return s.fromSource(ctx, obj, off, n)
}

// Checksums implements transfer.Checksummer with the wrapped source's
// lookup, asked once per object.
func (s *Source) Checksums(ctx context.Context, obj *transfer.Object) (map[string]string, error) {
	return s.sums(ctx, s.sh.state(obj.Key), obj)
}

// PartSizes implements transfer.PartLayout with the wrapped source's:
// the engine checks a peer's bytes of an ETag of parts, or of a
// checksum of part checksums, by what S3 says of the object's parts.
func (s *Source) PartSizes(ctx context.Context, obj *transfer.Object, parts int, exact bool) ([]int64, error) {
	pl, ok := s.Source.(transfer.PartLayout)
	if !ok {
		return nil, transfer.ErrNoPartLayout
	}
	return pl.PartSizes(ctx, obj, parts, exact)
}

// NeedsVerified implements transfer.Vouching: every object of the
// fleet's listing needs a checksum that matched, whatever --verify
// says, as its bytes may come from a peer and this node serves what it
// verified to the others.
func (s *Source) NeedsVerified(obj *transfer.Object) bool {
	return obj.Size > 0 && s.sh.opts.Owner(obj.Key) >= 0
}

// Unverified implements transfer.Vouching: an object that took bytes
// from a peer and that no checksum verified is fetched again, from the
// wrapped source only; the peer is not at fault (what S3 gives to check
// by failed to come) and stays. With TrustPeers an object routed to
// peers with nothing to check it by is kept, and counted.
func (s *Source) Unverified(obj *transfer.Object) bool {
	sh := s.sh
	st := sh.state(obj.Key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	switch {
	case len(st.served) == 0:
		return false
	case st.trusted:
		if !st.counted {
			st.counted = true
			sh.trusted.Add(1)
		}
		return false
	}
	st.s3only, st.served = true, nil
	return true
}

// ChecksumFailed is the hook for an object whose bytes failed the
// engine's checksum: every peer that sent some of them is bypassed for
// the rest of the run, and the object comes from the wrapped source
// from now on. Observer calls it before the engine fetches the object
// again.
func (s *Source) ChecksumFailed(key string) {
	sh := s.sh
	st := sh.state(key)
	sh.mu.Lock()
	st.s3only = true
	served := slices.Clone(st.served)
	st.served = nil
	sh.mu.Unlock()
	for _, i := range served {
		sh.peers[i].bypass("bytes of " + key + " failed their checksum")
	}
}

// Done forgets what the Source knew of the object named key, once the
// engine is done with it (Observer calls it; without, the Source keeps
// a little state per object for the whole run).
func (s *Source) Done(key string) {
	s.sh.mu.Lock()
	delete(s.sh.objs, key)
	s.sh.mu.Unlock()
}

// TrustsPeers reports SourceOptions.TrustPeers, for whoever marks
// objects Ready on the Server: with it, an object committed with
// nothing of S3's to verify it by may be served to the peers too.
func (s *Source) TrustsPeers() bool { return s.sh.opts.TrustPeers }

// Report returns where the bytes came from so far.
func (s *Source) Report() Report {
	r := Report{FromSource: s.sh.fromSource.Load(), FromPeers: map[string]int64{}, TrustedObjects: s.sh.trusted.Load()}
	for _, p := range s.sh.peers {
		if p.i == s.sh.opts.Self {
			continue
		}
		if b := p.bytes.Load(); b > 0 {
			r.FromPeers[p.addr] = b
		}
		if why, ok := p.bypassedFor(); ok {
			r.Bypassed = append(r.Bypassed, Bypass{Peer: p.addr, Node: p.i, Reason: why})
		}
	}
	return r
}

// state returns the object's state, made on first use.
func (sh *shared) state(key string) *objState {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	st := sh.objs[key]
	if st == nil {
		st = &objState{}
		sh.objs[key] = st
	}
	return st
}

// route returns the peer to ask for the range, and what to hand the
// engine with its body; nil when the range comes from the wrapped
// source: an empty object, one of no known owner, one this node is to
// fetch itself (holder: its own, or its owner's that it stands in for),
// one that failed its checksum, one S3 gives nothing to verify a peer's
// bytes with (unless TrustPeers).
func (s *Source) route(ctx context.Context, obj *transfer.Object, off, n int64) (*peer, handOver) {
	sh := s.sh
	if obj.Size <= 0 || obj.Err != nil {
		return nil, handOver{}
	}
	k := sh.holder(obj.Key)
	if k < 0 || k == sh.opts.Self {
		return nil, handOver{}
	}
	st := sh.state(obj.Key)
	sh.mu.Lock()
	s3only := st.s3only
	sh.mu.Unlock()
	if s3only {
		return nil, handOver{}
	}
	hand, ok := s.vouched(ctx, st, obj, off == 0 && n == obj.Size)
	if !ok {
		return nil, handOver{}
	}
	return sh.peers[k], hand
}

// handOver is what goes with a peer's body to the engine: S3's
// checksums (with a whole-object body) and whether S3 keeps the object
// encrypted, so the engine never takes its ETag for an MD5.
type handOver struct {
	sums      map[string]string
	encrypted bool
}

// sums returns the object's full-object checksums: those its listing
// gave, else the wrapped source's lookup, made once.
func (s *Source) sums(ctx context.Context, st *objState, obj *transfer.Object) (map[string]string, error) {
	if len(obj.Checksums) > 0 {
		return obj.Checksums, nil
	}
	cs, ok := s.Source.(transfer.Checksummer)
	if !ok {
		return nil, errors.New("the source looks up no checksums")
	}
	l, err := s.sh.once(ctx, &st.look, func(l *lookup) {
		if ce, ok := s.Source.(checksumsEncrypted); ok {
			l.sums, l.encrypted, l.err = ce.ChecksumsEncrypted(ctx, obj)
			l.told = l.err == nil
			return
		}
		l.sums, l.err = cs.Checksums(ctx, obj)
	})
	if err != nil {
		return nil, err
	}
	return l.sums, nil
}

// lookup is one lookup of S3's (checksums, or whether the object is
// encrypted), shared by whoever asks meanwhile.
type lookup struct {
	done      chan struct{} // closed once the rest is set
	sums      map[string]string
	encrypted bool
	// told: a checksum lookup that said whether the object is
	// encrypted too (checksumsEncrypted), so no probe need ask
	told bool
	err  error
}

// checksumsEncrypted is a source whose checksum lookup (S3's HEAD) also
// says whether S3 keeps the object with SSE-KMS or SSE-C, as
// s3store.Source's does.
type checksumsEncrypted interface {
	ChecksumsEncrypted(ctx context.Context, obj *transfer.Object) (map[string]string, bool, error)
}

// fromSource opens the range from the wrapped source, counting its
// bytes.
func (s *Source) fromSource(ctx context.Context, obj *transfer.Object, off, n int64) (*transfer.Body, error) {
	b, err := s.Source.Open(ctx, obj, off, n)
	if err != nil {
		return nil, err
	}
	counted := *b
	counted.ReadCloser = &countingBody{ReadCloser: b.ReadCloser, to: &s.sh.fromSource}
	return &counted, nil
}

// countingBody adds the bytes read through it to a total when closed
// (one atomic add per body, none per read).
type countingBody struct {
	io.ReadCloser
	to   *atomic.Int64
	n    int64
	done bool
}

func (c *countingBody) Read(p []byte) (int, error) {
	k, err := c.ReadCloser.Read(p)
	c.n += int64(k)
	return k, err
}

func (c *countingBody) Close() error {
	if !c.done {
		c.done = true
		c.to.Add(c.n)
	}
	return c.ReadCloser.Close()
}

// Report is where one node's bytes came from.
type Report struct {
	// FromSource is the bytes read from the wrapped source (S3).
	FromSource int64
	// FromPeers is the bytes read from each peer, by its address.
	FromPeers map[string]int64
	// Bypassed are the peers dropped for the rest of the run.
	Bypassed []Bypass
	// TrustedObjects is the objects taken from peers with nothing of
	// S3's to verify them by (TrustPeers).
	TrustedObjects int64
}

// Bypass is one peer dropped for the run, and why.
type Bypass struct {
	Peer   string // its address
	Node   int    // its index in the fleet
	Reason string
}

// errNotReady: the peer does not hold the object (yet).
var errNotReady = errors.New("not held by the peer")

// errOtherVersion: the peer holds another version of the object.
var errOtherVersion = errors.New("the peer holds another version")

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// contentRange parses "bytes A-B/SIZE".
func contentRange(v string) (off, n, size int64, ok bool) {
	rest, ok := strings.CutPrefix(v, "bytes ")
	if !ok {
		return 0, 0, 0, false
	}
	rng, tot, ok1 := strings.Cut(rest, "/")
	a, b, ok2 := strings.Cut(rng, "-")
	if !ok1 || !ok2 {
		return 0, 0, 0, false
	}
	start, err1 := strconv.ParseInt(a, 10, 64)
	end, err2 := strconv.ParseInt(b, 10, 64)
	size, err3 := strconv.ParseInt(tot, 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || end < start || size <= end {
		return 0, 0, 0, false
	}
	return start, end - start + 1, size, true
}
