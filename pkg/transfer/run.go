package transfer

import (
	"cmp"
	"context"
	"errors"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
)

// Run transfers every object the source lists. It returns an error only
// when the run as a whole could not proceed (the listing failed, ctx was
// cancelled); objects that fail are counted in Summary.Failed and
// reported to the Observer.
//
// The listing fills a bounded queue; workers take objects from it, open
// them (the skip check, the file) and hand them to the scheduler, which
// starts their ranges, and finish them; the stall watch, the gate's
// clock and the sampler run beside them until Run returns.
func (e *Engine) Run(ctx context.Context) (Summary, error) {
	e.start = time.Now()
	stop := e.watch(ctx)
	defer stop()
	samples := e.startSampler()

	g, gctx := errgroup.WithContext(ctx)
	queue := make(chan Object, e.opts.QueueSize)
	listing := e.list(gctx, queue)
	dispatched := e.dispatch(gctx)
	e.open(gctx, g, queue)
	err := g.Wait()
	e.sched.close()
	<-dispatched
	lerr := listing.wait(ctx)
	samples.end()
	sum := e.summary()
	if ctx.Err() == nil {
		// Every object listed has its verdict: the run was not
		// interrupted, so none stayed in the queue.
		if aerr := sum.Account("the engine"); aerr != nil {
			return sum, errors.Join(aerr, cmp.Or(err, lerr))
		}
	}
	return sum, cmp.Or(err, lerr, ctx.Err())
}

// watch starts the stall watch and the gate's clock; they run until stop.
func (e *Engine) watch(ctx context.Context) (stop func()) {
	e.stalls.init(e.opts.StallTimeout, e.mayTakeOver, e.ttfb.quantile)
	wctx, stop := context.WithCancel(ctx)
	go e.stalls.run(wctx)
	go e.gate.run(wctx)
	return stop
}

// dispatch starts the scheduler's dispatcher; the channel closes when it
// returns.
func (e *Engine) dispatch(ctx context.Context) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.sched.run(ctx)
	}()
	return done
}

// open takes objects from the queue as the scheduler admits them, until
// the queue closes or ctx ends (the objects not started then stay
// untouched), and hands each to an idle worker, or to a new one while
// fewer than Workers run. A worker holds one object from its start until
// it is committed, so Workers bounds the files and plans held at once,
// not the requests; the admission (scheduler.admit) holds them to what
// the window needs, and workers start only as they are needed: with 256
// small objects and a window of 16, about 32.
func (e *Engine) open(ctx context.Context, g *errgroup.Group, queue <-chan Object) {
	idle := make(chan Object)
	defer close(idle)
	workers := 0
	for e.sched.admit(ctx) {
		var o Object
		ok := false
		select {
		case o, ok = <-queue:
		case <-ctx.Done():
		}
		if !ok || ctx.Err() != nil {
			e.sched.unadmit()
			return
		}
		select {
		case idle <- o:
			continue
		default:
		}
		if workers < e.opts.Workers {
			workers++
			g.Go(func() error {
				e.work(ctx, o, idle)
				return nil
			})
			continue
		}
		select {
		case idle <- o:
		case <-ctx.Done():
			e.sched.unadmit()
			return
		}
	}
}

// work transfers o, then every object handed to it on idle until idle
// closes.
func (e *Engine) work(ctx context.Context, o Object, idle <-chan Object) {
	for ok := true; ok; o, ok = <-idle {
		if ctx.Err() != nil {
			e.sched.unadmit()
			continue // the run ended: the object stays untouched
		}
		t := e.newObject(ctx, o)
		t.queued = true
		t.finish(t.run())
	}
}

// listing is the lister at work. It runs beside the workers, not in
// their group: a lister may block in a read that ignores ctx (a manifest
// on a stdin that stays open), and an interrupted run does not wait for
// it. Once Run gives up on it, what it still lists is dropped (abandoned).
type listing struct {
	e      *Engine
	queue  chan<- Object
	queued int
	done   chan struct{}

	mu        sync.Mutex
	abandoned bool
	err       error // a listing that fails part way: the objects it listed are still transferred
}

// list starts listing into queue, which it closes at the end.
func (e *Engine) list(ctx context.Context, queue chan<- Object) *listing {
	l := &listing{e: e, queue: queue, done: make(chan struct{})}
	go l.run(ctx)
	return l
}

func (l *listing) run(ctx context.Context) {
	defer close(l.done)
	defer close(l.queue)
	e := l.e
	var lister Lister = e.lanes[0].Source
	if e.opts.Lister != nil {
		lister = e.opts.Lister
	}
	err := lister.List(ctx, func(o Object) error { return l.emit(ctx, o) })
	e.listed.Store(true)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.abandoned {
		return
	}
	if err == nil && e.opts.Listing != nil {
		e.opts.Listing.ListingDone()
	}
	if err != nil && ctx.Err() == nil {
		l.err = err
	}
}

// emit queues one listed object that passes the filter.
func (l *listing) emit(ctx context.Context, o Object) error {
	e := l.e
	e.listedN.Add(1)
	if e.opts.Filter != nil && !e.opts.Filter(o) {
		e.excluded.Add(1)
		return nil
	}
	if e.opts.Listing != nil {
		l.mu.Lock()
		if !l.abandoned {
			e.opts.Listing.Listed(o)
		}
		l.mu.Unlock()
	}
	// The first Workers objects queue at once; the rest of the first page
	// waits for the first response, so data flows before the second
	// page is asked for.
	if l.queued++; l.queued == e.opts.Workers+1 {
		select {
		case <-e.begun:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	e.unopened.Add(o.Size)
	select {
	case l.queue <- o:
		return nil
	case <-ctx.Done():
		e.unopened.Add(-o.Size)
		return ctx.Err()
	}
}

// wait waits for the listing to end, or gives up on it once ctx ends,
// and returns the error it failed with part way, if any.
func (l *listing) wait(ctx context.Context) error {
	select {
	case <-l.done:
	case <-ctx.Done():
		l.mu.Lock()
		l.abandoned = true
		l.mu.Unlock()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}
