package transfer

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// object is one object's transfer, read top to bottom: start decides
// whether the object needs any request and creates its file, the parts
// move its bytes, and finish verifies them, commits the file (or removes
// it, or keeps it for resume) and reports the outcome.
type object struct {
	e     *Engine
	ctx   context.Context // the run's
	o     Object
	began time.Time

	// Set by start.
	f      File
	verify *verifier // nil: nothing is verified
	// pctx ends when a part fails (cancel), so its siblings stop.
	pctx   context.Context
	cancel context.CancelFunc

	moved, reused atomic.Int64 // bytes fetched in this run, kept from an earlier one

	// The plan, guarded by the scheduler's lock.
	oneRequest      bool  // fetched whole, without a Range
	partSize        int64 // the length of every range but the tail's
	align           int64 // what the tail's boundaries are multiples of
	queued          bool  // its bytes count in Engine.unopened until it opens
	next            int64 // the first byte not yet planned
	window          int64 // the file's order window, 0 for none
	written         prefix
	running         int   // ranges started and not ended
	err             error // the first part's failure
	planningStopped bool
	ended           bool
	done            chan struct{} // closed once planning stopped and running is 0
}

// newObject reports o started and returns its transfer.
func (e *Engine) newObject(ctx context.Context, o Object) *object {
	e.opts.Observer.ObjectStarted(o)
	return &object{e: e, ctx: ctx, o: o, began: time.Now(), done: make(chan struct{})}
}

// DryRunReason is the skip reason of every object a dry run would transfer.
const DryRunReason = "dry run: would transfer"

// start decides whether the object needs a transfer and creates its
// file. An error ends the object before any of its bytes move: it failed
// when it was listed, the sink skips it, the run is dry, or its file
// could not be created.
func (t *object) start() error {
	e, o := t.e, &t.o
	if o.Err != nil {
		return o.Err
	}
	if err := e.skip(t.ctx, o); err != nil {
		return err
	}
	if e.opts.DryRun {
		return &SkipError{Reason: DryRunReason}
	}
	if err := checkSize(o); err != nil {
		return err
	}
	f, err := e.sink.Create(t.ctx, *o)
	if err != nil {
		return err
	}
	t.f = f
	t.oneRequest = o.Size < e.opts.Threshold || o.NoRanges
	t.verify = e.newVerifier(t.ctx, o, !t.oneRequest, f)
	t.partSize = e.plan(o.Size)
	t.align = alignOf(f)
	if w, ok := f.(OrderWindow); ok {
		t.window = w.OrderWindow()
	}
	t.pctx, t.cancel = context.WithCancel(t.ctx)
	return nil
}

// skip returns the sink's reason not to transfer o (a *SkipError), or nil.
// With VerifyExisting, a file the sink would keep as unchanged is read
// and compared with the object's checksum first.
func (e *Engine) skip(ctx context.Context, o *Object) error {
	c, ok := e.sink.(Checker)
	if !ok || o.Size < 0 {
		return nil
	}
	err := c.Check(*o)
	if err == nil {
		return nil
	}
	return e.verifyExisting(ctx, o, err)
}

// checkSize refuses an object whose size is not known, or is larger
// than any S3 object (a listing that says so is wrong, and nothing, a file
// or a plan, is sized from it). Sources and listers give every object its
// size: a single object's is learned by a probe before the run, a
// manifest entry's by a lookup.
func checkSize(o *Object) error {
	switch {
	case o.Size < 0:
		return Permanent(errors.New("size unknown: the source gave none"))
	case o.Size > MaxObjectSize:
		return Permanent(fmt.Errorf("listed size %d is larger than any object (%d bytes)", o.Size, int64(MaxObjectSize)))
	}
	return nil
}

// wait waits for the parts, verifies the object and commits its file:
// the file is committed when every part arrived and verified, removed
// when one failed, and kept for resume when the run was interrupted.
func (t *object) wait() Result {
	<-t.done
	t.cancel()
	err := t.err
	if err == nil && t.next < t.o.Size {
		err = t.ctx.Err() // interrupted before every range started
	}
	var v Verification
	if err == nil {
		v, err = t.verify.objectComplete(t.f, t.o.Size)
	}
	l, lands := t.f.(Lander)
	require := t.e.opts.Verify == VerifyRequire
	if err == nil && require && !lands {
		err = Required(v, t.o.Size) // before Commit: nothing unverified at the final name
	}
	if err == nil {
		if err = t.f.Commit(); err != nil {
			err = fmt.Errorf("commit: %w", err)
		} else if lands {
			v = v.landed(l.Landed())
			if require {
				// The destination's check comes with the object in
				// place: it stays, named as failed.
				if err = Required(v, t.o.Size); err != nil {
					err = fmt.Errorf("%w; the object is in place", err)
				}
			}
		}
	}
	if ru, ok := t.f.(Reuser); ok && err == nil {
		t.reused.Add(ru.Reused())
	}
	kept := false
	if err != nil {
		kept, err = t.discard(err)
	}
	return Result{Bytes: t.moved.Load(), Resumed: t.reused.Load(), Verification: v, Err: err, Kept: kept}
}

// discard ends a file whose transfer failed with err: kept for resume
// when the run was interrupted and the file has a journal, else removed.
// It reports whether the file kept anything a rerun resumes.
func (t *object) discard(err error) (bool, error) {
	if j, ok := t.f.(Suspender); ok && t.ctx.Err() != nil {
		kept, serr := j.Suspend()
		if serr != nil {
			err = errors.Join(err, fmt.Errorf("keep for resume: %w", serr))
		}
		return kept, err
	}
	if aerr := t.f.Abort(); aerr != nil {
		err = errors.Join(err, fmt.Errorf("abort: %w", aerr))
	}
	return false, err
}

// run transfers the object from start to finish and returns its outcome.
func (t *object) run() Result {
	if err := t.start(); err != nil {
		if t.queued {
			t.e.sched.unadmit()
		}
		t.unqueue()
		return Result{Err: err}
	}
	t.e.sched.add(t)
	return t.wait()
}

// unqueue takes the object's bytes out of what is listed and not yet
// open (Engine.unopened), once: it opened, or ended before.
func (t *object) unqueue() {
	if t.queued {
		t.queued = false
		t.e.unopened.Add(-t.o.Size)
	}
}

// finish reports the object's outcome r. An object that changed since it
// was listed is looked up again and transferred anew, once, when the
// lister can refresh it.
func (t *object) finish(r Result) {
	e := t.e
	if rf, ok := e.opts.Lister.(Refresher); ok && errors.Is(r.Err, ErrModified) && t.ctx.Err() == nil {
		r = t.refreshed(rf, r.Bytes)
	}
	if errors.Is(r.Err, ErrChecksum) && t.ctx.Err() == nil && t.refetchable() {
		// Observers hear of the refetch before its first request, so a
		// source that lent some of the bytes (a peer) can step aside.
		e.opts.Observer.Retry(t.o, 0, r.Err)
		r = t.refetched(r.Bytes)
	}
	e.markBegun()
	r.Object, r.Elapsed = t.o, time.Since(t.began)
	switch why := SkipReason(r.Err); {
	case why != "":
		var se *SkipError
		r.Intact = errors.As(r.Err, &se) && se.Intact
		r.Err, r.Skipped = nil, why
		e.skipped.Add(1)
	case r.Err != nil:
		e.failed.Add(1)
	default:
		e.objects.Add(1)
	}
	e.opts.Observer.ObjectDone(r)
}

// refetchable reports whether the object's bytes can be fetched again
// after its checksum failed: not those a stream already passed on.
func (t *object) refetchable() bool {
	_, stream := t.f.(Stream)
	return t.f != nil && !stream
}

// refetched fetches an object whose bytes failed their checksum once
// more, from the start (its partial file went with the failure): a body
// damaged in transit, once, is not a failure of the object; bytes that
// fail again are. The second fetch counts as a retry; n is what the
// first moved.
func (t *object) refetched(n int64) Result {
	t.e.retries.Add(1)
	again := &object{e: t.e, ctx: t.ctx, o: t.o, began: t.began, done: make(chan struct{})}
	res := again.run()
	res.Bytes += n
	return res
}

// refreshed looks up an object that changed since it was listed and
// transfers it anew; n is what the first attempt moved.
func (t *object) refreshed(r Refresher, n int64) Result {
	o := t.o
	if err := r.Refresh(t.ctx, &o); err != nil {
		return Result{Bytes: n, Err: fmt.Errorf("changed since listed, look up again: %w", err)}
	}
	t.e.retries.Add(1)
	again := &object{e: t.e, ctx: t.ctx, o: o, began: t.began, done: make(chan struct{})}
	res := again.run()
	t.o = again.o
	res.Bytes += n
	return res
}
