package transfer

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
)

// object is one object's transfer, read top to bottom: start decides
// whether the object needs any request and creates its file, the parts
// move its bytes, and finish verifies them, commits the file (or removes
// it, or keeps it for resume) and reports the outcome.
type object struct {
	e     *Engine
	ctx   context.Context
	o     Object
	began time.Time

	// Set by start.
	first  *Body // an open first range, consumed by the first part
	f      File
	verify *verifier // nil: nothing is verified

	moved, reused atomic.Int64 // bytes fetched in this run, kept from an earlier one
	parts         errgroup.Group
	whole         *partSum // the running sums of a one-request fetch
	err           error    // the error of a one-request fetch
}

// newObject reports o started and returns its transfer.
func (e *Engine) newObject(ctx context.Context, o Object) *object {
	e.opts.Observer.ObjectStarted(o)
	return &object{e: e, ctx: ctx, o: o, began: time.Now()}
}

// DryRunReason is the skip reason of every object a dry run would transfer.
const DryRunReason = "dry run: would transfer"

// start decides whether the object needs a transfer and creates its
// file. An error ends the object before any of its bytes move: it failed
// when it was listed, the sink skips it, the run is dry, or its file
// could not be created.
func (t *object) start() error {
	e, o := t.e, &t.o
	t.first, o.First = o.First, nil
	if o.Err != nil {
		return o.Err
	}
	if err := e.skip(t.ctx, o); err != nil {
		return err
	}
	if e.opts.DryRun {
		return &SkipError{Reason: DryRunReason}
	}
	if err := t.learnSize(); err != nil {
		return err
	}
	f, err := e.sink.Create(t.ctx, *o)
	if err != nil {
		return err
	}
	t.f = f
	t.verify = e.newVerifier(t.ctx, o, o.Size >= e.opts.Threshold || t.first != nil)
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

// learnSize confirms a size before anything is sized from it. A listed
// size above S3's largest object is confirmed by the first range; an
// object of unknown size (a single object given by URL) learns its size,
// ETag and modification time from its first range.
func (t *object) learnSize() error {
	e, o := t.e, &t.o
	if o.Size <= MaxObjectSize && o.Size >= 0 {
		return nil
	}
	if t.first == nil {
		b, err := e.probe(t.ctx, o)
		if err != nil {
			return err
		}
		t.first = b
	}
	if o.Size > MaxObjectSize && t.first.Size != o.Size {
		return Permanent(fmt.Errorf("listed size %d, the server's %d: %w", o.Size, t.first.Size, ErrModified))
	}
	o.Size = t.first.Size
	if o.ETag == "" {
		o.ETag = t.first.ETag
	}
	if o.ModTime.IsZero() {
		o.ModTime = t.first.ModTime
	}
	return nil
}

// startParts starts fetching every part of the object, up to Threads at a
// time, and returns once the last has started. An object below the
// multipart threshold is fetched in one request before startParts returns.
// Parts are planned as they start, not listed up front: memory holds the
// ranges in flight, whatever the object's size and part size.
func (t *object) startParts() {
	e, size := t.e, t.o.Size
	if size == 0 {
		closeBody(t.first)
		return
	}
	if t.first == nil && size < e.opts.Threshold {
		t.whole = t.verify.partSum()
		n, err := e.fetch(t.ctx, &t.o, t.f, 0, size, -1, nil, t.verify, t.whole)
		t.moved.Add(n)
		t.err = err
		return
	}
	firstLen, partSize := e.plan(size, t.first)
	g, gctx := errgroup.WithContext(t.ctx)
	g.SetLimit(e.opts.Threads)
	journal, _ := t.f.(Journal)
	for off, n := int64(0), firstLen; off < size; off, n = off+n, partSize {
		n = min(n, size-off)
		var b *Body
		if off == 0 {
			b, t.first = t.first, nil
		}
		if gctx.Err() != nil {
			closeBody(b)
			break
		}
		g.Go(func() error { return t.part(gctx, off, n, b, journal) })
	}
	t.parts.Go(g.Wait)
}

// part moves bytes [off, off+n) into the file (b, if not nil, is already
// open), records their sum and journals them. Without b, what an earlier
// run journaled of the part is taken first, once its bytes read back with
// the sum that run computed: the whole part, or the prefix that run had
// written when it was interrupted, after which only the rest is fetched.
// A part this run is interrupted in journals the prefix it wrote, with its
// running CRC, so that an early Ctrl-C on large parts does not start them
// over.
func (t *object) part(ctx context.Context, off, n int64, b *Body, journal Journal) error {
	_, whole := t.f.(PartWriter) // written whole or not at all: no prefix
	ps := t.verify.partSum()
	var kept int64
	if journal != nil && b == nil {
		if have, sum := journal.Completed(off, n); have == n || have > 0 && !whole {
			if r, ok := t.verify.readBack(t.f, off, have, sum); ok {
				t.reused.Add(have)
				if have == n {
					t.verify.set(off, r)
					return nil // durable from an earlier run, and read back
				}
				ps.resume(r)
				kept = have
			}
		}
	}
	got, err := t.e.fetch(ctx, &t.o, t.f, off+kept, n-kept, n-kept, b, t.verify, ps)
	t.moved.Add(got)
	if err != nil {
		if journal != nil && !whole && t.ctx.Err() != nil && kept+got > 0 {
			// Interrupted: keep the prefix. Its sum covers all of it,
			// the bytes kept before and those written now.
			if sum, ok := t.verify.prefix(ps, kept+got); ok {
				err = errors.Join(err, journal.PartDone(off, kept+got, sum))
			}
		}
		return fmt.Errorf("bytes=%d-%d: %w", off, off+n-1, err)
	}
	sum := t.verify.record(off, ps)
	if journal != nil {
		if err := journal.PartDone(off, n, sum); err != nil {
			return fmt.Errorf("journal bytes=%d-%d: %w", off, off+n-1, err)
		}
	}
	t.e.opts.Observer.PartDone(t.o, off, n)
	return nil
}

// wait waits for the parts, verifies the object and commits its file:
// the file is committed when every part arrived and verified, removed
// when one failed, and kept for resume when the run was interrupted.
func (t *object) wait() Result {
	err := t.parts.Wait()
	if err == nil {
		err = t.err
	}
	var v Verification
	if err == nil {
		v, err = t.verified()
	}
	if err == nil {
		if err = t.f.Commit(); err != nil {
			err = fmt.Errorf("commit: %w", err)
		}
	}
	if err != nil {
		err = t.discard(err)
	}
	return Result{Bytes: t.moved.Load(), Resumed: t.reused.Load(), Verification: v, Err: err}
}

// verified compares the bytes' sums with the object's checksums.
func (t *object) verified() (Verification, error) {
	if t.o.Size == 0 {
		v := Verification{Off: t.e.opts.Verify == VerifyOff}
		if !v.Off {
			v.unverified(UnverifiedEmpty, "an empty object has nothing to check")
		}
		return v, nil
	}
	return t.verify.result(t.whole.whole(), t.f, t.o.Size)
}

// discard ends a file whose transfer failed with err: kept for resume
// when the run was interrupted and the file has a journal, else removed.
func (t *object) discard(err error) error {
	if j, ok := t.f.(Journal); ok && t.ctx.Err() != nil {
		if serr := j.Suspend(); serr != nil {
			err = errors.Join(err, fmt.Errorf("keep for resume: %w", serr))
		}
	} else if aerr := t.f.Abort(); aerr != nil {
		err = errors.Join(err, fmt.Errorf("abort: %w", aerr))
	}
	return err
}

// run transfers the object from start to finish and returns its outcome.
func (t *object) run() Result {
	if err := t.start(); err != nil {
		closeBody(t.first)
		return Result{Err: err}
	}
	t.startParts()
	return t.wait()
}

// finish reports the object's outcome r. An object that changed since it
// was listed is looked up again and transferred anew, once, when the
// lister can refresh it.
func (t *object) finish(r Result) {
	e := t.e
	if rf, ok := e.opts.Lister.(Refresher); ok && errors.Is(r.Err, ErrModified) && t.ctx.Err() == nil {
		r = t.refreshed(rf, r.Bytes)
	}
	e.markBegun()
	r.Object, r.Elapsed = t.o, time.Since(t.began)
	switch why := SkipReason(r.Err); {
	case why != "":
		r.Err, r.Skipped = nil, why
		e.skipped.Add(1)
	case r.Err != nil:
		e.failed.Add(1)
	default:
		e.objects.Add(1)
	}
	e.opts.Observer.ObjectDone(r)
}

// refreshed looks up an object that changed since it was listed and
// transfers it anew; n is what the first attempt moved.
func (t *object) refreshed(r Refresher, n int64) Result {
	o := t.o
	if err := r.Refresh(t.ctx, &o); err != nil {
		return Result{Bytes: n, Err: fmt.Errorf("changed since listed, look up again: %w", err)}
	}
	t.e.retries.Add(1)
	again := &object{e: t.e, ctx: t.ctx, o: o, began: t.began}
	res := again.run()
	t.o = again.o
	res.Bytes += n
	return res
}
