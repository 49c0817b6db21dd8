package transfer

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// Options tune the engine. Zero values take the defaults noted, which are
// the built-in settings of pkg/config (the one set of defaults: the
// command line passes every field from config.Settings; a test in cmd
// checks that the two agree).
type Options struct {
	// MaxRequests is the budget: the bound on requests in flight, shared
	// by every range of every open object (default 256). With one object
	// open, or at the end of a run, its ranges take every free slot.
	MaxRequests int
	// Workers bounds the objects open at once (default 256): files being
	// written, their plans and verification state. It does not bound
	// requests; an object stays open until it is committed. Within it,
	// objects open as the window needs them (scheduler.admit).
	Workers int
	// Threads, when above 0, caps the ranges in flight of one object; 0
	// (the default) leaves every object free to use the whole budget.
	Threads int
	// Adaptive says whether the window of requests in flight follows
	// the server (AdaptiveOn, the default: it starts at StartWindow,
	// grows to the budget and backs off on SlowDown) or stays at the
	// budget.
	Adaptive Adaptive
	// StartWindow is where an adaptive window starts (0: 32), at most
	// the budget. Where each new connection costs more than a request
	// (a TLS handshake on both ends), a smaller start opens fewer
	// connections than the run may need, and the climb adds them where
	// they pay.
	StartWindow int
	// PartSize is the size of one range (default 8 MiB).
	PartSize int64
	// Threshold: objects smaller than it are fetched with one GET
	// (default PartSize).
	Threshold int64
	// QueueSize bounds the objects listed but not yet started (default
	// 1000), so a listing of millions of keys runs in fixed memory.
	QueueSize int
	// BufferSize is the size of the pooled buffer each range streams
	// through (default: bufferMemory shared by the window the request
	// was sent under, a power of two from 32 to 128 KiB: 128 KiB up to
	// 128 requests, 64 KiB for 256). Memory does not grow with part
	// size.
	BufferSize int
	// Backoff paces a range's retries (default BudgetFor(RangeRead)).
	Backoff Backoff
	// StallTimeout abandons a range that delivered nothing for this long
	// and retries it on a new connection (default 30s).
	StallTimeout time.Duration
	// Filter, when set, decides which listed objects to transfer.
	Filter func(Object) bool
	// Limiter, when set, caps the total throughput.
	Limiter *RateLimiter
	// Observer receives progress (default NopObserver).
	Observer Observer
	// Verify says what to verify of each object (default VerifyAuto).
	Verify Verify
	// Listing, when set, sees every object that passes the filter as it is
	// listed, and the end of a complete listing.
	Listing ListObserver
	// VerifyExisting reads each file a Checker skips as unchanged and
	// compares it with the object's checksum, fetching the object again
	// when it differs (the sink must implement Existing).
	VerifyExisting bool
	// DryRun lists and checks objects but transfers nothing: each object
	// that would be transferred is reported skipped with that reason.
	DryRun bool
	// OpaqueETags says the source's ETags are never MD5s of the bytes,
	// whatever they look like: no check or comparison uses them as one.
	OpaqueETags bool
	// Lister, when set, lists the objects instead of the first lane's
	// source (a manifest, one shard of a listing); the lanes still open
	// them. When it is also a Refresher, an object that changed since it
	// was listed is looked up again and transferred anew, once.
	Lister Lister
	// OnSample, when set, receives a Sample of the run every SampleEvery
	// (default 1s) and one for the rest of the run before Run returns. It
	// is called from one goroutine.
	OnSample func(Sample)
	// SampleEvery is the length of a sampling interval.
	SampleEvery time.Duration
}

// Adaptive says how the window of requests in flight is set.
type Adaptive int

const (
	// AdaptiveOn grows the window from min(32, budget) to the budget
	// and cuts it when the server answers SlowDown (see gate).
	AdaptiveOn Adaptive = iota
	// AdaptiveOff keeps the window at the budget.
	AdaptiveOff
)

// bufferMemory is what the copy buffers of a run may hold at most by
// default: 256 requests in flight with 128 KiB each held 32 MiB and put
// the peak RSS above 64 MiB. A read rarely fills more than 64 KiB from a
// connection paced as S3's; unpaced loopback ranges, few in flight (a
// small budget, or a window held at its knee: buffers), keep 128 KiB.
const bufferMemory = 16 << 20

// defaultBuffer is the copy buffer for up to budget requests in flight:
// bufferMemory shared by them, a power of two from 32 to 128 KiB.
func defaultBuffer(budget int) int {
	size := 128 << 10
	for size > 32<<10 && size*budget > bufferMemory {
		size /= 2
	}
	return size
}

// WithDefaults returns o with every zero field set to its default.
func (o Options) WithDefaults() Options {
	if o.Workers <= 0 {
		o.Workers = 256
	}
	if o.Threads < 0 {
		o.Threads = 0
	}
	if o.MaxRequests <= 0 {
		o.MaxRequests = 256
	}
	if o.PartSize <= 0 {
		o.PartSize = 8 << 20
	}
	if o.Threshold <= 0 {
		o.Threshold = o.PartSize
	}
	if o.QueueSize <= 0 {
		o.QueueSize = 1000
	}
	if o.BufferSize <= 0 {
		o.BufferSize = defaultBuffer(o.MaxRequests)
	}
	if o.Backoff.MaxAttempts <= 0 {
		o.Backoff = BudgetFor(RangeRead)
	}
	if o.StallTimeout <= 0 {
		o.StallTimeout = 30 * time.Second
	}
	if o.Observer == nil {
		o.Observer = NopObserver{}
	}
	if o.SampleEvery <= 0 {
		o.SampleEvery = time.Second
	}
	return o
}

// Summary is what a run did.
type Summary struct {
	Objects, Failed, Skipped int64
	// Listed counts the objects the lister gave, Excluded those of them
	// the filter took out: Listed = Objects + Skipped + Excluded + Failed
	// in every run that was not interrupted (conservation.go).
	Listed, Excluded  int64
	Bytes             int64
	Requests, Retries int64
	// SlowDowns are the retries the server asked for by throttling
	// (SlowDown, 503); they are counted in Retries too.
	SlowDowns int64
	// Hedged counts the ranges taken over as stragglers: asked for again
	// on a new connection from the byte they reached (not in Retries).
	Hedged int64
	// Splits counts the ranges planned shorter than a part to balance
	// the last wave of a run (tail pieces), and the pieces a straggler's
	// rest is fetched in beside its next attempt (rest.go); no range is
	// cut in flight.
	Splits int64
	// Ranges counts the ranges fetched (planned ranges that sent a
	// request): Requests beyond Ranges are takeovers and retries.
	Ranges int64
	// Overfetch is the bytes received and not written: skipped before a
	// range's start (a server that ignored Range), or a part a part
	// writer sends again from its start.
	Overfetch int64
	// InFlightMean and InFlightPeak are the requests in flight over the
	// run: their time-weighted mean and their most at once.
	InFlightMean float64
	InFlightPeak int
	// Window is the window of requests in flight at the end of the run,
	// WindowStop why it stands there (WindowBudget, WindowKnee,
	// WindowSlowDown, WindowDemand) and WindowKnee the window the climb
	// stopped at where more requests bought no throughput (0: none).
	Window     int
	WindowStop string
	WindowKnee int
	// WindowPhases are the adaptive window's transitions, in order: the
	// phase it entered, when, and the window then (its first is the
	// start; none with AdaptiveOff).
	WindowPhases []WindowChange
	Elapsed      time.Duration
	// TTFB50 and TTFB99 are percentiles of the time from sending a
	// request to receiving its response headers.
	TTFB50, TTFB99 time.Duration
	// TTFB is the histogram of the time to first byte, Request that of
	// the whole request: from sending it to its last byte written.
	TTFB, Request Histogram
	// RequestTime is the sum of every request's time and WriteTime the
	// part of it spent in the sink's WriteAt: their ratio tells how much
	// of a transfer waited on the destination.
	RequestTime, WriteTime time.Duration
	Lanes                  []LaneSummary
}

// LaneSummary is what one lane carried.
type LaneSummary struct {
	Name  string
	Bytes int64
}

// Engine moves objects from a source to a sink.
type Engine struct {
	lanes []*lane
	sink  Sink
	opts  Options

	gate   *gate      // the budget: requests in flight overall
	sched  *scheduler // which range takes the next request slot
	bufs   buffers    // the ranges' copy buffers
	start  time.Time
	ttfb   latencyBuckets
	reqs   latencyBuckets // whole-request time
	stalls stallWatch

	objects, failed, skipped atomic.Int64
	listedN, excluded        atomic.Int64 // objects listed, and filtered out
	bytes, requests, retries atomic.Int64
	slowdowns, hedged        atomic.Int64
	splits                   atomic.Int64 // ranges planned short for the tail
	ranges, overfetch        atomic.Int64 // ranges fetched; bytes received, not written
	// unopened sums the sizes of the objects listed and not yet open,
	// for the tail's plan (tail.go).
	unopened atomic.Int64
	// listed: the listing ended (a takeover may come sooner at the end).
	listed atomic.Bool
	// reqNanos and writeNanos sum the requests' time and the part of it
	// spent writing; each range adds to them once, when it ends.
	reqNanos, writeNanos atomic.Int64

	// begun is closed once the first object's first response arrived (or
	// the object ended without one): the lister holds what is left of the
	// first page once every worker has an object, until then.
	begun     chan struct{}
	beginOnce sync.Once
}

func (e *Engine) markBegun() { e.beginOnce.Do(func() { close(e.begun) }) }

type lane struct {
	Lane
	outstanding atomic.Int64
	bytes       atomic.Int64
}

// New returns an engine that lists from lanes[0] and fetches ranges over
// all lanes into sink.
func New(lanes []Lane, sink Sink, opts Options) (*Engine, error) {
	if len(lanes) == 0 {
		return nil, errors.New("transfer: no source")
	}
	sized := opts.BufferSize <= 0
	opts = opts.WithDefaults()
	e := &Engine{sink: sink, opts: opts, begun: make(chan struct{})}
	e.gate = newGateAt(opts.MaxRequests, opts.StartWindow, opts.Adaptive == AdaptiveOn, func() time.Duration { return e.ttfb.quantile(0.5) }, e.bytes.Load)
	e.sched = newScheduler(e)
	for _, l := range lanes {
		e.lanes = append(e.lanes, &lane{Lane: l})
	}
	e.bufs = newBuffers(opts.BufferSize, sized && opts.Adaptive == AdaptiveOn, opts.MaxRequests, e.gate.bound)
	return e, nil
}

// mayTakeOver says whether one more straggler may be taken over (they
// are at most about 5% of the requests), and whether the run is at its
// end: the listing ended, no open object has a range to plan, and the
// window has idle slots.
func (e *Engine) mayTakeOver() (ok, end bool) {
	ok = e.stalls.taken.Load() < e.requests.Load()/20+1
	end = e.listed.Load() && e.sched.planned() && e.gate.inFlightNow() < e.gate.bound()
	return ok, end
}

func (e *Engine) summary() Summary {
	s := Summary{
		Objects:  e.objects.Load(),
		Failed:   e.failed.Load(),
		Skipped:  e.skipped.Load(),
		Listed:   e.listedN.Load(),
		Excluded: e.excluded.Load(),
		Bytes:    e.bytes.Load(),
		Requests: e.requests.Load(),
		Retries:  e.retries.Load(),
		Elapsed:  time.Since(e.start),
		TTFB50:   e.ttfb.quantile(0.50),
		TTFB99:   e.ttfb.quantile(0.99),

		SlowDowns:   e.slowdowns.Load(),
		Hedged:      e.hedged.Load(),
		Splits:      e.splits.Load(),
		Ranges:      e.ranges.Load(),
		Overfetch:   e.overfetch.Load(),
		TTFB:        e.ttfb.snapshot(),
		Request:     e.reqs.snapshot(),
		RequestTime: time.Duration(e.reqNanos.Load()),
		WriteTime:   time.Duration(e.writeNanos.Load()),
	}
	s.InFlightMean, s.InFlightPeak = e.gate.load()
	s.Window, s.WindowStop, s.WindowKnee = e.gate.window()
	s.WindowPhases = e.gate.phases()
	for _, l := range e.lanes {
		s.Lanes = append(s.Lanes, LaneSummary{Name: l.Name, Bytes: l.bytes.Load()})
	}
	return s
}

// MaxObjectSize is the largest object S3 stores (50 TB). An object
// listed larger fails before anything is sized from it.
const MaxObjectSize = 50_000_000_000_000

// MaxParts is the most parts one object is fetched in, as S3 allows for
// an upload: a larger object gets larger parts.
const MaxParts = 10_000

// plan returns the length of an object's parts: the part size, raised
// where needed so that no object is cut into more than MaxParts parts
// (there is no lower bound: tests use parts of a few bytes).
func (e *Engine) plan(size int64) int64 {
	return max(e.opts.PartSize, ceilDiv(size, MaxParts))
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }
