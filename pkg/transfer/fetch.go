package transfer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// A range of at most smallRange bytes streams through a buffer of
// smallBuffer bytes, not BufferSize: a run of small objects holds one per
// request in flight, and at 64 KiB each they kept the peak RSS of 5,000 x
// 64 KiB objects with 256 requests in flight above 64 MiB. Half the range
// per read costs a 64 KiB object one more read.
const (
	smallRange  = 64 << 10
	smallBuffer = 32 << 10
)

// countEvery is how many bytes a range moves between updates of the
// shared counters (progress, lane pacing).
const countEvery = 512 << 10

// count adds k bytes moved over l to the transfer's counters.
func (e *Engine) count(l *lane, k int64) {
	if k == 0 {
		return
	}
	e.bytes.Add(k)
	l.bytes.Add(k)
	l.outstanding.Add(-k)
	e.opts.Observer.Bytes(k)
}

// pickLane returns the lane that will drain its outstanding bytes, plus
// n, soonest, and charges it n bytes. A lane's pace is what it carried so
// far; until every lane has carried something, the fewest outstanding
// bytes win. So a slower path is given less, in proportion, instead of
// holding the transfer back, and all lanes finish together.
func (e *Engine) pickLane(n int64) *lane {
	best := e.lanes[0]
	if len(e.lanes) > 1 {
		paced := true
		for _, l := range e.lanes {
			if l.bytes.Load() == 0 {
				paced = false
				break
			}
		}
		bestCost := -1.0
		for _, l := range e.lanes {
			cost := float64(l.outstanding.Load() + n)
			if paced {
				cost /= float64(l.bytes.Load()) // seconds, in units of the shared elapsed time
			}
			if bestCost < 0 || cost < bestCost {
				best, bestCost = l, cost
			}
		}
	}
	best.outstanding.Add(n)
	return best
}

// fetch moves bytes [off, off+n) of the object into the file, holding
// request slot s for the first attempt, retrying and resuming from the
// last byte received. A whole piece's first request asks for the whole
// object, without a Range.
func (r *rangeRun) fetch(ctx context.Context, off, n int64, s slot) (int64, error) {
	e := r.e
	e.ranges.Add(1)
	ask := n
	if r.piece.whole {
		ask = -1
	}
	var done int64
	var k tries
	var rs *rest // the other pieces of its rest, once taken over and split
	for first := true; ; first = false {
		if !first {
			var err error
			if s, err = e.gate.acquire(ctx); err != nil {
				return r.joined(rs, done, err)
			}
		}
		// A range holds a buffer only while it holds a request slot, not
		// while it waits at the gate (as the ranges of the next objects
		// do while the last ones drain) or between attempts. So a run
		// needs no more buffers than requests in flight, where it took
		// one per range started: half as many for 2 x 8 ranges of 64
		// MiB objects, 580 fewer page faults per GiB.
		pool := e.bufs.pool(n, s.window) // a small object does not hold a large buffer
		r.buf = pool.get()
		got, err := r.attempt(ctx, &s, off+done, n-done, ask)
		e.bufs.put(pool, r.buf) // before the slot: no more buffers than slots
		r.buf = nil
		e.gate.release(s, err != nil && throttled(err))
		if r.pw == nil || err == nil {
			done += got
			if ask >= 0 || done > 0 {
				ask = n - done // a retry asks for what is missing only
			}
		} else {
			e.overfetch.Add(got) // the part is sent again from its start
		}
		if err == nil {
			return r.joined(rs, done, nil)
		}
		cut := errors.Is(err, errTakenOver)
		if err = r.retry(ctx, &k, err, off+done); err != nil {
			return r.joined(rs, done, err)
		}
		if cut && rs == nil {
			// A straggler's rest goes over the idle slots in pieces.
			var end int64
			if end, rs = r.spread(ctx, off+done, off+n); rs != nil {
				ctx, n = rs.ctx, end-off
				ask = n - done
			}
		}
	}
}

// joined ends a fetch that moved done bytes with err: with the pieces of
// its rest (rs, nil for none) waited for, their bytes added and their
// failure, the cause of the range's own when they ended it, reported.
func (r *rangeRun) joined(rs *rest, done int64, err error) (int64, error) {
	if rs == nil {
		return done, err
	}
	if err != nil {
		rs.cancel(err) // the range failed: its pieces are of no use
	}
	got, perr := r.join(rs)
	if err == nil && perr == nil {
		return done + got, nil
	}
	if perr != nil && (err == nil || errors.Is(err, context.Canceled)) {
		err = perr
	}
	return done, err
}

// tries counts a range's failed attempts: those the server throttled
// (SlowDown) apart, as they have a budget of their own.
type tries struct{ failed, throttled int }

// retry decides what follows a failed attempt that reached byte at: nil
// to try again (at once for a straggler taken over, else after the
// backoff), or the error the range ends with.
func (r *rangeRun) retry(ctx context.Context, k *tries, err error, at int64) error {
	e := r.e
	if errors.Is(err, errTakenOver) && ctx.Err() == nil {
		// A straggler: its remaining bytes go out at once on a new
		// connection, not as a failed attempt.
		e.hedged.Add(1)
		return nil
	}
	if throttled(err) {
		// SlowDown slows the transfer (the gate) rather than failing
		// the range: it has a budget of its own, three times larger.
		e.slowdowns.Add(1)
		k.throttled++
	} else {
		k.failed++
	}
	if !Retriable(err) || e.opts.Backoff.spent(k.failed, k.throttled) || ctx.Err() != nil {
		if n := k.failed + k.throttled; n > 1 {
			err = fmt.Errorf("%w (after %d attempts)", err, n)
		}
		return err
	}
	e.retries.Add(1)
	e.opts.Observer.Retry(*r.o, at, err)
	if serr := sleep(ctx, e.opts.Backoff.Delay(max(k.failed, k.throttled))); serr != nil {
		return err
	}
	return nil
}

// attempt is one request for bytes [off, off+n), asking for ask bytes
// (-1: the whole object): open, validate, copy.
func (r *rangeRun) attempt(ctx context.Context, s *slot, off, n, ask int64) (int64, error) {
	e := r.e
	t0 := time.Now()
	defer e.timeRequest(t0)
	r.l, r.arrived = e.pickLane(n), 0
	defer func() { r.l.outstanding.Add(r.arrived - n) }()
	rctx, clock := e.stalls.track(ctx, r.hedge)
	r.clock = clock
	defer e.stalls.done(clock)
	body, err := r.request(rctx, s, off, ask)
	if err != nil {
		return 0, stallCause(rctx, err)
	}
	defer body.Close()
	skip, err := e.validate(r.o, body, off, n)
	if err != nil {
		return 0, err
	}
	whole := r.pw != nil && skip == 0 // a part writer sends the part again from its start
	r.v.answered(&r.sum, body, whole)
	var got int64
	switch {
	case whole:
		got, err = r.writePart(rctx, off, n, body)
	case r.st != nil:
		// The body's reader itself, not Body's promoted Read: one call
		// layer less per read.
		got, err = r.copyStaged(rctx, body.ReadCloser, off, n, skip)
		r.arrived = got
	default:
		got, err = r.copy(rctx, body.ReadCloser, off, n, skip)
		r.arrived = got
	}
	return got, stallCause(rctx, err)
}

// request sends one request for ask bytes from off (ask < 0: the whole
// object) over the attempt's lane, records its time to first byte and
// tells the gate it was answered.
func (r *rangeRun) request(ctx context.Context, s *slot, off, ask int64) (*Body, error) {
	e := r.e
	if ask < 0 {
		off = 0
	}
	e.requests.Add(1)
	t0 := time.Now()
	b, err := r.l.Source.Open(ctx, r.o, off, ask)
	e.ttfb.add(time.Since(t0))
	e.markBegun()
	if err == nil && b == nil {
		err = errors.New("source returned no body")
	}
	if err != nil {
		return nil, err
	}
	s.connect = b.Connect
	e.gate.answered(s)
	return b, nil
}

// writePart hands a part writer the body of bytes [off, off+n), which
// it reads itself (summed as it reads when the part is verified).
func (r *rangeRun) writePart(ctx context.Context, off, n int64, body *Body) (int64, error) {
	// The bandwidth cap holds the part writer back as it reports bytes
	// moved (an upload as the request reads its body, a kernel copy
	// between its chunks). A server-side copy moves no byte through
	// s3pd: nothing to cap.
	limit := r.e.opts.Limiter
	if _, ref := body.ReadCloser.(Dataless); ref {
		limit = nil
	}
	return r.pw.WritePart(ctx, off, n, r.sum.summing(body), func(k int64) {
		r.clock.touch(k)
		r.e.count(r.l, k)
		r.arrived += k
		if limit != nil && k > 0 {
			limit.WaitN(ctx, int(k)) // cancelled: the part writer sees ctx
		}
	})
}

// timeRequest records the time of one request that began at t0.
func (e *Engine) timeRequest(t0 time.Time) {
	d := time.Since(t0)
	e.reqs.add(d)
	e.reqNanos.Add(int64(d))
}

// validate checks a response against the request and the pinned
// version, and returns how many leading bytes of the body precede off (a server
// that ignored Range and sent the whole object).
func (e *Engine) validate(o *Object, b *Body, off, n int64) (int64, error) {
	if o.ETag != "" && b.ETag != "" && b.ETag != o.ETag {
		return 0, Permanent(fmt.Errorf("etag %s, want %s: %w", b.ETag, o.ETag, ErrModified))
	}
	if b.Size >= 0 && b.Size != o.Size {
		return 0, Permanent(fmt.Errorf("size %d, want %d: %w", b.Size, o.Size, ErrModified))
	}
	if b.Off > off || b.Off+b.Len < off+n {
		return 0, &BadResponseError{fmt.Sprintf("response carries bytes %d-%d, want %d-%d", b.Off, b.Off+b.Len-1, off, off+n-1)}
	}
	return off - b.Off, nil
}

// copy streams n bytes of body, after skipping skip bytes, to the file
// at off through the attempt's buffer. This is the hot path: no
// allocation, no lock.
func (r *rangeRun) copy(ctx context.Context, body io.Reader, off, n, skip int64) (int64, error) {
	e, f, buf, clock, ps := r.e, r.f, r.buf, r.clock, &r.sum
	if err := e.skipBytes(body, buf, skip); err != nil {
		return 0, err
	}
	// The counters shared by every range (the transfer's bytes, the
	// lane's, the observer's) are updated once per countEvery bytes, not
	// per buffer: fewer atomic adds on cache lines all ranges write.
	// The time spent in WriteAt is summed here and added to the shared
	// total once, when the range ends.
	var done, counted int64
	var writing time.Duration
	defer func() {
		e.count(r.l, done-counted)
		e.writeNanos.Add(int64(writing))
	}()
	for done < n {
		want := min(int64(len(buf)), n-done)
		k, err := io.ReadFull(body, buf[:want])
		if k > 0 {
			clock.touch(int64(k))
			if e.opts.Limiter != nil {
				if lerr := e.opts.Limiter.WaitN(ctx, k); lerr != nil {
					return done, lerr
				}
			}
			w0 := time.Now()
			_, werr := f.WriteAt(buf[:k], off+done)
			writing += time.Since(w0)
			if werr != nil {
				e.overfetch.Add(int64(k))
				return done, Permanent(fmt.Errorf("write at %d: %w", off+done, werr))
			}
			ps.update(buf[:k])
			done += int64(k)
			if done-counted >= countEvery {
				e.count(r.l, done-counted)
				counted = done
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return done, &ShortBodyError{Got: done, Want: n}
			}
			return done, err
		}
	}
	return done, nil
}

// skipBytes reads and drops the skip bytes of body before a range's
// start, counted as overfetch.
func (e *Engine) skipBytes(body io.Reader, buf []byte, skip int64) error {
	for skip > 0 {
		k, err := io.ReadFull(body, buf[:min(int64(len(buf)), skip)])
		skip -= int64(k)
		e.overfetch.Add(int64(k))
		if err != nil {
			return fmt.Errorf("skip to range start: %w", err)
		}
	}
	return nil
}

// copyStaged is copy for a file that lends its own buffers (a Stager):
// the body is read straight into the stage, at most len(buf) bytes at a
// time, so the stall watch sees each read as it does in copy,
// and the stage writes its buffer out when it is full and at the end.
// The hot path too: no allocation, no lock.
func (r *rangeRun) copyStaged(ctx context.Context, body io.Reader, off, n, skip int64) (done int64, err error) {
	e, buf, clock, ps := r.e, r.buf, r.clock, &r.sum
	if err := e.skipBytes(body, buf, skip); err != nil {
		return 0, err
	}
	w, err := r.st.Stage(off, n)
	if err != nil {
		return 0, Permanent(fmt.Errorf("stage at %d: %w", off, err))
	}
	var counted int64
	var writing time.Duration
	defer func() {
		w0 := time.Now()
		if cerr := w.Close(); cerr != nil && err == nil {
			err = Permanent(fmt.Errorf("write before %d: %w", off+done, cerr))
		}
		writing += time.Since(w0)
		e.count(r.l, done-counted)
		e.writeNanos.Add(int64(writing))
	}()
	for done < n {
		dst := w.Next()
		want := min(int64(len(dst)), int64(len(buf)), n-done)
		k, rerr := io.ReadFull(body, dst[:want])
		if k > 0 {
			clock.touch(int64(k))
			if e.opts.Limiter != nil {
				if lerr := e.opts.Limiter.WaitN(ctx, k); lerr != nil {
					return done, lerr
				}
			}
			ps.update(dst[:k])
			w0 := time.Now()
			werr := w.Wrote(k)
			writing += time.Since(w0)
			done += int64(k)
			if werr != nil {
				return done, Permanent(fmt.Errorf("write before %d: %w", off+done, werr))
			}
			if done-counted >= countEvery {
				e.count(r.l, done-counted)
				counted = done
			}
		}
		if rerr != nil {
			if errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF) {
				return done, &ShortBodyError{Got: done, Want: n}
			}
			return done, rerr
		}
	}
	return done, nil
}
