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

// open sends one request for bytes [off, off+n) of o (n < 0: the whole
// object) over l, and records its time to first byte.
func (e *Engine) open(ctx context.Context, l *lane, o *Object, off, n int64) (*Body, error) {
	e.requests.Add(1)
	t0 := time.Now()
	b, err := l.Source.Open(ctx, o, off, n)
	e.ttfb.add(time.Since(t0))
	e.markBegun()
	if err == nil && b == nil {
		err = errors.New("source returned no body")
	}
	return b, err
}

// fetch moves bytes [off, off+n) of o into f, asking the source for ask
// bytes (-1: the whole object, without a Range), retrying and resuming
// from the last byte received.
// held, if not nil, is the request slot the first attempt already has.
func (e *Engine) fetch(ctx context.Context, o *Object, f File, off, n, ask int64, c *verifier, ps *partSum, held *slot) (int64, error) {
	pool := e.bufs
	if n <= smallRange {
		pool = e.small // a small object does not hold a large buffer
	}

	e.ranges.Add(1)
	var done int64
	var body *Body
	throttles := 0
	for attempt := 1; ; attempt++ {
		var s slot
		if held != nil {
			s, held = *held, nil
		} else {
			var err error
			if s, err = e.gate.acquire(ctx); err != nil {
				closeBody(body)
				return done, err
			}
		}
		// A range holds a buffer only while it holds a request slot, not
		// while it waits at the gate (as the ranges of the next objects
		// do while the last ones drain) or between attempts. So a run
		// needs no more buffers than requests in flight, where it took
		// one per range started: half as many for 2 x 8 ranges of 64
		// MiB objects, 580 fewer page faults per GiB.
		buf := pool.get()
		got, err := e.attempt(ctx, &s, o, f, off+done, n-done, ask, body, buf, c, ps)
		pool.put(buf)
		slow := err != nil && throttled(err)
		e.gate.release(s, slow)
		body = nil
		if _, whole := f.(PartWriter); !whole || err == nil {
			done += got
			if ask >= 0 || done > 0 {
				ask = n - done // a retry asks for what is missing only
			}
		} else {
			e.overfetch.Add(got) // the part is sent again from its start
		}
		if err == nil {
			return done, nil
		}
		if errors.Is(err, errTakenOver) && ctx.Err() == nil {
			// A straggler: its remaining bytes go out at once on a new
			// connection, not as a failed attempt.
			e.hedged.Add(1)
			attempt--
			continue
		}
		if slow {
			e.slowdowns.Add(1)
			// SlowDown slows the transfer (the gate) rather than failing
			// the range: it has a budget of its own, three times larger.
			throttles++
			attempt--
		}
		if !Retriable(err) || e.opts.Backoff.spent(attempt, throttles) || ctx.Err() != nil {
			if tries := attempt + throttles; tries > 1 {
				err = fmt.Errorf("%w (after %d attempts)", err, tries)
			}
			return done, err
		}
		e.retries.Add(1)
		e.opts.Observer.Retry(*o, off+done, err)
		if serr := sleep(ctx, e.opts.Backoff.Delay(max(attempt, throttles))); serr != nil {
			return done, err
		}
	}
}

// attempt is one request: open (unless body is given), validate, copy.
func (e *Engine) attempt(ctx context.Context, s *slot, o *Object, f File, off, n, ask int64, body *Body, buf []byte, c *verifier, ps *partSum) (int64, error) {
	t0 := time.Now()
	defer e.timeRequest(t0)
	l := e.pickLane(n)
	var arrived int64 // bytes already taken off the lane's outstanding count
	defer func() { l.outstanding.Add(arrived - n) }()
	// A range the sink's order window or the bandwidth cap may hold back
	// is never a straggler; a part writer's part would start over.
	_, ordered := f.(OrderWindow)
	_, whole := f.(PartWriter)
	rctx, clock := e.stalls.track(ctx, !ordered && !whole && e.opts.Limiter == nil)
	defer e.stalls.done(clock)
	if body == nil {
		reqOff, reqN := off, ask
		if ask < 0 {
			reqOff = 0
		}
		b, err := e.open(rctx, l, o, reqOff, reqN)
		if err != nil {
			return 0, stallCause(rctx, err)
		}
		body = b
		e.gate.answered(s)
	}
	defer body.Close()
	skip, err := e.validate(o, body, off, n)
	if err != nil {
		return 0, err
	}
	c.fromResponse(body)
	ps.begin(c)
	if pw, ok := f.(PartWriter); ok && skip == 0 {
		_, ref := body.ReadCloser.(Dataless)
		ps.restart() // a part writer sends the part again from its start
		if ps.active() && !ref {
			// The part writer reads the body itself: sum what it reads.
			tee := *body
			tee.ReadCloser = summingBody{body.ReadCloser, ps}
			body = &tee
		}
		// The bandwidth cap holds the part writer back as it reports
		// bytes moved (an upload as the request reads its body, a kernel
		// copy between its chunks). A server-side copy moves no byte
		// through s3pd: nothing to cap.
		limit := e.opts.Limiter
		if ref {
			limit = nil
		}
		got, err := pw.WritePart(rctx, off, n, body, func(k int64) {
			clock.touch(k)
			e.count(l, k)
			arrived += k
			if limit != nil && k > 0 {
				limit.WaitN(rctx, int(k)) // cancelled: the part writer sees rctx
			}
		})
		return got, stallCause(rctx, err)
	}
	// The body's reader itself, not Body's promoted Read: one call layer
	// less per read.
	if st, ok := f.(Stager); ok {
		got, err := e.copyStaged(rctx, body.ReadCloser, st, off, n, skip, buf, l, clock, ps)
		arrived = got
		return got, stallCause(rctx, err)
	}
	got, err := e.copy(rctx, body.ReadCloser, f, off, n, skip, buf, l, clock, ps)
	arrived = got
	return got, stallCause(rctx, err)
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

// copy streams n bytes of body, after skipping skip bytes, to f at off
// through buf. This is the hot path: no allocation, no lock.
func (e *Engine) copy(ctx context.Context, body io.Reader, f File, off, n, skip int64, buf []byte, l *lane, clock *rangeClock, ps *partSum) (int64, error) {
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
		e.count(l, done-counted)
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
				e.count(l, done-counted)
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
func (e *Engine) copyStaged(ctx context.Context, body io.Reader, st Stager, off, n, skip int64, buf []byte, l *lane, clock *rangeClock, ps *partSum) (done int64, err error) {
	if err := e.skipBytes(body, buf, skip); err != nil {
		return 0, err
	}
	w, err := st.Stage(off, n)
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
		e.count(l, done-counted)
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
				e.count(l, done-counted)
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
