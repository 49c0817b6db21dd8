package job

import (
	"cmp"
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/s3pd/s3pd/pkg/extsort"
	"github.com/s3pd/s3pd/pkg/shard"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// Spec is what a transferring command asks of one run: exactly one of
// Get and Copy, and how the engine runs it.
type Spec struct {
	// Get is a download from S3 into local files, onto stdout or into
	// nothing (get, cat, bench, and copy from S3 to local).
	Get *GetSpec
	// Copy is every other direction (copy).
	Copy *CopySpec
	// Engine is the engine's options as the settings and flags set them;
	// Open completes them with what the job decides (a server-side
	// copy's part size, who lists, what decorates the listing).
	Engine transfer.Options
	// Bandwidth caps the bytes per second through s3pd (0: no cap).
	Bandwidth int64
	// SpaceCheck compares what is still to land in a local destination
	// with its free space, before the first byte and as the listing
	// streams.
	SpaceCheck bool
}

// Run is a job ready to transfer: its lanes, sink, engine options and
// lister, and what the command line needs to render it. Close releases
// what it holds.
type Run struct {
	// Lanes name the run's lanes (network cards), in the engine's order.
	Lanes []string
	// Destination names where an object lands, for messages (nil: no
	// place to name).
	Destination func(name string) string
	// Dest is the destination's sink as its store made it (nil: none),
	// for what the command line reports of it through the capabilities
	// its store declares (a local sink's direct I/O).
	Dest any
	// LocalTo says the source is local files: the scheme of the
	// destination's store ("local" for local paths), or "stdin"; ""
	// from a store.
	LocalTo string
	// ServerSide says the bytes move inside the store, not through
	// s3pd.
	ServerSide bool
	// Options are the engine's options as this run has them.
	Options transfer.Options
	// Deletes is what --delete removes after the run: "file" or
	// "object" ("" without --delete).
	Deletes string
	// Streams says the run is one stream of unknown size (standard
	// input to S3), which runs without the engine: no lanes, no
	// listing, no samples.
	Streams bool

	lanes     []transfer.Lane
	sink      transfer.Sink
	scaled    Scaled
	listing   transfer.ListObserver
	listed    *Listed
	space     spaceSink
	spaceDest string
	// mustExist, when set, is the object the run must find: finding
	// nothing is one failed object, whose error is missing.
	mustExist *transfer.Object
	missing   error
	get       *Get
	copy      *Copy
	fleet     *fleetRun
	stream    *stream
	// opaqueETags and unordered are the source's: ETags that are not
	// MD5s, a listing out of key order.
	opaqueETags, unordered bool
}

// Open builds the run spec asks for: the source over the run's lanes,
// the sink, who lists, and the engine's options. Errors that mean the
// spec cannot run as asked are *SpecError.
func Open(ctx context.Context, spec Spec) (*Run, error) {
	r := &Run{Options: spec.Engine}
	if spec.Bandwidth > 0 {
		r.Options.Limiter = transfer.NewRateLimiter(spec.Bandwidth)
	}
	var err error
	if spec.Get != nil {
		err = r.openGet(ctx, spec)
	} else {
		err = r.openCopy(ctx, spec)
	}
	if err != nil {
		return nil, err
	}
	if r.listed != nil {
		r.listing = r.listed
	}
	for _, l := range r.lanes {
		r.Lanes = append(r.Lanes, l.Name)
	}
	r.Dest = r.sink
	if d, ok := r.sink.(interface{ Destination(string) string }); ok && r.Destination == nil {
		r.Destination = d.Destination
	}
	return r, nil
}

// openGet opens a download: from S3 into local files, stdout or nothing.
func (r *Run) openGet(ctx context.Context, spec Spec) error {
	g, err := newGet(ctx, *spec.Get)
	if err != nil {
		return err
	}
	r.get, r.lanes, r.sink, r.scaled, r.listed = g, g.Source.Lanes, g.Sink, g.Scaled, g.Listed
	r.Destination, r.mustExist, r.missing = g.Destination(), g.MustExist, g.Missing
	r.opaqueETags, r.unordered = g.Source.OpaqueETags, g.Source.Unordered
	r.startOver(g.Source.StartWindow)
	if g.Listed != nil {
		r.Deletes = "file"
	}
	if sp, ok := g.Sink.(spaceSink); ok && spec.SpaceCheck && !spec.Engine.DryRun && g.dest != nil {
		r.space, r.spaceDest = sp, spec.Get.Dest
	}
	if f := spec.Get.Fleet; f != nil {
		if err := r.openFleet(ctx, *f, spec.Get.Scale.Filter); err != nil {
			r.Close()
			return err
		}
	}
	return nil
}

// openCopy opens a copy in any other direction, with the engine's part
// size, threshold and cap on requests the copy needs.
func (r *Run) openCopy(ctx context.Context, spec Spec) error {
	c, err := newCopy(ctx, *spec.Copy)
	if err != nil {
		return err
	}
	r.copy, r.lanes, r.sink, r.scaled, r.listed = c, c.Lanes, c.Sink, c.Scaled, c.Listed
	r.LocalTo, r.ServerSide = c.LocalTo, c.ServerSide
	if c.stream != nil {
		r.stream, r.Streams, r.Destination = c.stream, true, c.stream.sink.Destination
	}
	r.opaqueETags, r.unordered = c.OpaqueETags, c.Unordered
	r.startOver(c.StartWindow)
	r.Options.PartSize, r.Options.Threshold = c.PartSize, c.Threshold
	if c.MaxRequests > 0 {
		r.Options.MaxRequests = min(r.Options.MaxRequests, c.MaxRequests)
	}
	switch {
	case c.Listed == nil:
	case c.LocalTo == "local":
		r.Deletes = "file"
	default:
		r.Deletes = "object"
	}
	return nil
}

// startOver sets where the window starts, as the store's connections
// need (0: the engine's default), unless the options set it.
func (r *Run) startOver(window int) {
	if r.Options.StartWindow == 0 {
		r.Options.StartWindow = window
	}
}

// Hooks are what the command line hands a transfer: who observes it,
// and what it adds to the listing.
type Hooks struct {
	Observer transfer.Observer
	// Listing observes the listing besides the job's own record (nil:
	// nothing).
	Listing transfer.ListObserver
	// Filter picks the listed objects to transfer (nil: all).
	Filter func(transfer.Object) bool
	// OnSample receives the run's samples every SampleEvery.
	OnSample    func(transfer.Sample)
	SampleEvery time.Duration
	// Start is called once the engine is built, before the first request.
	Start func()
	// Again, when set, reads the listing again until the context ends
	// (bench --duration); Classes, when set, counts the objects by class,
	// observing them and timing each lane's requests.
	Again   *Again
	Classes *Classes
	// Lister, when set, decorates the run's listing between what the job
	// counts and the engine: a seam for tests, which hand it a listing
	// that loses objects to prove that the run then fails (nil: none).
	Lister func(transfer.Lister) transfer.Lister
}

// ShardReport is the shard's report, complete once the listing is (nil
// without --shard, or when the listing did not complete).
func (r *Run) ShardReport() *shard.Report {
	if rep := r.scaled.Report; rep != nil && rep.Done() {
		return rep
	}
	return nil
}

// Transfer runs the engine over the run. A listing that finds nothing
// where an object had to be fails that object with a *NotFoundError,
// told to the observer and counted in the summary; a destination
// without room is a *SpaceError.
// A --fleet node that was not interrupted then lingers: it tells its
// peers it is done and serves them until they all are, or
// FleetSpec.Linger runs out (the summary's Elapsed is the engine's
// run alone).
func (r *Run) Transfer(ctx context.Context, h Hooks) (transfer.Summary, error) {
	if r.stream != nil {
		h.start()
		return r.stream.transfer(ctx, h.Observer, r.Options.Verify == transfer.VerifyRequire)
	}
	rctx, stop, o, acct, err := r.engineOptions(ctx, h)
	defer stop(nil)
	if err != nil {
		return transfer.Summary{}, err
	}
	eng, err := transfer.New(h.lanes(r.lanes), r.sink, o)
	if err != nil {
		return transfer.Summary{}, err
	}
	h.start()
	sum, err := eng.Run(rctx)
	if r.fleet != nil && ctx.Err() == nil {
		r.fleet.linger(ctx)
	}
	if se := spaceFailure(rctx, err); se != nil {
		return sum, se
	}
	sum = acct.moved(sum)
	if r.mustExist != nil && err == nil && ctx.Err() == nil && sum.Objects+sum.Failed+sum.Skipped == 0 {
		if h.Observer != nil {
			h.Observer.ObjectDone(transfer.Result{Object: *r.mustExist, Err: r.missing})
		}
		// The object the command named is listed, and fails.
		sum.Listed++
		sum.Failed++
		return sum, nil
	}
	if rctx.Err() == nil && !BadManifest(err) {
		if aerr := r.account(sum, acct.listed()); aerr != nil {
			return sum, errors.Join(aerr, err)
		}
	}
	return sum, err
}

// account checks a run's counts once it ends uninterrupted: what the
// job's listing yielded (listed) is what the engine listed, each with
// one verdict, and a shard's share is what the split said it is.
func (r *Run) account(sum transfer.Summary, listed int64) error {
	if listed != sum.Listed {
		return &transfer.UnaccountedError{Where: "the job's listing", Listed: listed,
			Transferred: sum.Objects, Skipped: sum.Skipped, Excluded: sum.Excluded, Failed: sum.Failed}
	}
	if err := sum.Account("the engine"); err != nil {
		return err
	}
	if rep := r.scaled.Report; rep != nil && rep.Done() && rep.Objects != listed {
		return &transfer.UnaccountedError{Where: "shard " + rep.Shard.String() + " (its split holds " + strconv.FormatInt(rep.Objects, 10) + " objects)",
			Listed: rep.Objects, Transferred: sum.Objects, Skipped: sum.Skipped, Excluded: sum.Excluded, Failed: sum.Failed}
	}
	return nil
}

// accounting is what the job counts of a run's listing besides the
// engine: what the innermost lister yielded, and the objects the filter
// took out before the engine saw them (the space check filters as it
// reads the listing ahead).
type accounting struct {
	listed      func() int64
	movedFilter bool
	excluded    *atomic.Int64
}

// moved adds the objects filtered before the engine to its summary: they
// were listed, and excluded.
func (a accounting) moved(sum transfer.Summary) transfer.Summary {
	if a.movedFilter {
		n := a.excluded.Load()
		sum.Listed += n
		sum.Excluded += n
	}
	return sum
}

// engineOptions are the engine's options for one transfer with h: the
// job's listing record beside h's, the free-space check around the
// lister, and a directory bucket's opaque ETags (and, for a dry run, its
// listing in key order). The context it returns is the run's, whose
// cause says the space check stopped it.
func (r *Run) engineOptions(ctx context.Context, h Hooks) (context.Context, context.CancelCauseFunc, transfer.Options, accounting, error) {
	o := r.Options
	o.Observer, o.Filter, o.OnSample, o.SampleEvery = h.Observer, h.Filter, h.OnSample, h.SampleEvery
	if h.Classes != nil {
		o.Observer = transfer.Observers{cmp.Or[transfer.Observer](h.Observer, transfer.NopObserver{}), h.Classes}
	}
	if r.fleet != nil {
		o.Observer = transfer.Observers{cmp.Or[transfer.Observer](o.Observer, transfer.NopObserver{}), r.fleet.observer}
	}
	o.Listing = h.Listing
	switch {
	case r.listing != nil && h.Listing != nil:
		o.Listing = listings{h.Listing, r.listing}
	case r.listing != nil:
		o.Listing = r.listing
	}
	base := cmp.Or[transfer.Lister](r.scaled.Lister, r.lanes[0].Source)
	if h.Again != nil {
		base = h.again(base) // counted as the engine sees it: every pass
	}
	lister, listed := transfer.Count(base)
	if h.Lister != nil {
		lister = h.Lister(lister)
	}
	o.Lister = lister
	acct := accounting{listed: listed, excluded: &atomic.Int64{}}
	filter := o.Filter
	if match := o.Filter; match != nil {
		filter = func(obj transfer.Object) bool {
			if !match(obj) {
				acct.excluded.Add(1)
				return false
			}
			return true
		}
	}
	rctx, stop, spaced, filter, err := withSpaceCheck(ctx, r.space, r.spaceDest, lister, r.scaled.Lister != nil, filter)
	if err != nil {
		return rctx, stop, o, acct, &SpecError{Err: err}
	}
	if spaced != nil {
		o.Lister, o.Filter = spaced, filter
		acct.movedFilter = true
	}
	if r.opaqueETags {
		o.OpaqueETags = true
	}
	if r.unordered && o.DryRun {
		// A directory bucket lists out of key order: a dry run's list
		// compares from run to run in key order.
		o.Lister = extsort.Sorted(o.Lister, "", 0)
	}
	return rctx, stop, o, acct, nil
}

// lanes are the run's lanes, each source timed by h's Classes.
func (h Hooks) lanes(ls []transfer.Lane) []transfer.Lane {
	if h.Classes == nil {
		return ls
	}
	out := make([]transfer.Lane, len(ls))
	for i, l := range ls {
		out[i] = transfer.Lane{Name: l.Name, Source: classSource{l.Source, h.Classes}}
	}
	return out
}

// again is l read again as h.Again says.
func (h Hooks) again(l transfer.Lister) transfer.Lister {
	if h.Again.Mix && h.Classes != nil {
		return Mixed{Lister: l, Class: h.Classes.class, Classes: len(h.Classes.rows), Pass: h.Again.Pass}
	}
	return Repeat{Lister: l, Pass: h.Again.Pass}
}

// start calls Start, when set.
func (h Hooks) start() {
	if h.Start != nil {
		h.Start()
	}
}

// listings tells each of its observers of the listing.
type listings []transfer.ListObserver

func (l listings) Listed(o transfer.Object) {
	for _, x := range l {
		x.Listed(o)
	}
}

func (l listings) ListingDone() {
	for _, x := range l {
		x.ListingDone()
	}
}

// ListingComplete reports whether the run's listing ended without
// error (--delete runs only then).
func (r *Run) ListingComplete() bool { return r.listed.Complete() }

// Delete is --delete's step after a run without failures: it removes
// the files or objects at the destination whose names the listing did
// not give and keep picks (the include/exclude rules), reporting each;
// with dryRun it only reports them. It refuses with
// ErrIncompleteListing when the listing did not complete.
func (r *Run) Delete(ctx context.Context, keep func(name string) bool, dryRun bool, report func(name string, size int64)) error {
	if !r.listed.Complete() {
		return ErrIncompleteListing
	}
	if r.get != nil {
		return r.get.Delete(ctx, keep, dryRun, report)
	}
	return r.copy.Delete(ctx, keep, dryRun, report)
}

// Close releases the destination's lock and the first range if unused,
// and stops a fleet's server.
func (r *Run) Close() {
	if r.fleet != nil {
		r.fleet.close()
	}
	if r.get != nil {
		r.get.Close()
	}
	if r.copy != nil {
		r.copy.Close()
	}
}
