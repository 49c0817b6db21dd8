package transfer

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// stallWatch watches the ranges in flight for stragglers and silence.
// Each range keeps a count of the bytes it received that the copy loop
// adds to as data arrives (an atomic add, no clock read), and one
// goroutine, ticking every watchTick, notes the count at each tick,
// when it last moved and how long the gaps between moves were. A tick
// that comes late (the process had no CPU) counts as no silence: its
// lateness is added to every range's last move.
//
//   - During a run, a straggler is a range that delivered nothing (its
//     next bytes, or its response, for at least 2 x the p99 time to
//     first byte) for max(minStraggle, 4 x the p99 gap between reads of
//     the ranges in flight) while others progressed since and still do,
//     the median range among them too (so not while most are silent).
//   - At the end of a run (nothing left to plan, idle slots), a
//     straggler is an outlier among the ranges in flight: over the last
//     max(minStraggle, outlierTTFB x the median time to first byte) it
//     received less than 1/outlierShare of what the median range did,
//     and that median moved (a range still awaiting its response waits
//     2 x the p99 time to first byte too). Ranges all slow alike (a
//     machine short of CPU, a loaded link) are no outliers: none is
//     taken over. When the median did not move (a range left alone, or
//     most silent), a range is a straggler once silent for max(
//     minStraggle, 4 x the p99 gap) if some range delivered or finished
//     more than a tick after it fell silent, else for lonelyStraggle.
//   - A stalled range delivered nothing for the stall timeout, whatever
//     its peers do (a dead connection): it is abandoned and retried as an
//     error (errStalled), between one timeout and one timeout plus a tick
//     after its last byte.
//
// A straggler is taken over: cancelled and its remaining bytes asked
// for on a new connection from the byte it reached (errTakenOver,
// retried at once and not counted as an attempt). Takeovers are at most
// about 5% of the requests. A range the sink's order window or the
// bandwidth cap may hold back is never taken over.
type stallWatch struct {
	timeout time.Duration
	every   time.Duration // the watch's tick
	base    time.Time
	// mayTakeOver says whether one more takeover fits the budget, and
	// whether the run is at its end (nothing left to plan, idle slots).
	mayTakeOver func() (ok, end bool)
	// ttfb is a quantile of the time to first byte of the run's requests.
	ttfb func(q float64) time.Duration

	mu   sync.Mutex
	live map[*rangeClock]struct{}
	// gaps holds the most recent gaps between moves of ranges' counts
	// (ns), a ring; n counts the gaps seen.
	gaps [512]int64
	n    int
	// lastMove is when some range last delivered bytes (ns since base):
	// a range silent since before it was singled out.
	lastMove int64
	// lastTick is when the watch last looked (ns since base).
	lastTick int64
	// moved is scratch for the end of a run's outliers: what each range
	// received over the window.
	moved []int64
	idle  []*rangeClock // scratch: the ranges silent since the last tick
}

type rangeClock struct {
	progress atomic.Int64 // bytes received, added to by touch
	cancel   context.CancelCauseFunc
	// hedge says the range may be taken over.
	hedge bool
	// Kept by the watch, under its mutex: the progress it last saw and
	// when (nanoseconds since the watch's base) that value was new.
	seen    int64
	changed int64
	// at holds the progress at each of the last ticks, a ring; ticks
	// counts the ticks seen.
	at    [outlierTicks]int64
	ticks int
}

// movedOver returns the bytes the range received over the last k ticks,
// and whether it was watched that long. Under the watch's lock.
func (c *rangeClock) movedOver(k int) (int64, bool) {
	if c.ticks <= k {
		return 0, false
	}
	n := len(c.at)
	return c.at[(c.ticks-1)%n] - c.at[(c.ticks-1-k)%n], true
}

const (
	// watchTick is how often the watch looks at the ranges in flight.
	watchTick = 50 * time.Millisecond
	// minStraggle is the least silence that makes a straggler, and the
	// least window over which an outlier is measured.
	minStraggle = 250 * time.Millisecond
	// outlierTTFB: the window over which an outlier is measured at the
	// end of a run is at least that many median times to first byte.
	outlierTTFB = 4
	// outlierShare: an outlier received less than 1/outlierShare of
	// what the median range in flight did over the window.
	outlierShare = 4
	// outlierTicks bounds the window, in ticks (the ring each range
	// keeps): 750 ms at watchTick.
	outlierTicks = 16
	// lonelyStraggle is the least silence that makes a straggler at the
	// end of a run when no other range progresses (a busy machine may
	// leave every range silent that long).
	lonelyStraggle = time.Second
)

// errTakenOver reports a range the watch took over as a straggler.
var errTakenOver = errors.New("taken over: slower than its peers")

// touch records that k bytes arrived.
func (c *rangeClock) touch(k int64) { c.progress.Add(k) }

func (w *stallWatch) init(timeout time.Duration, mayTakeOver func() (ok, end bool), ttfb func(q float64) time.Duration) {
	w.timeout, w.base, w.mayTakeOver, w.ttfb = timeout, time.Now(), mayTakeOver, ttfb
	w.every = min(watchTick, max(timeout/4, 10*time.Millisecond))
	w.live = make(map[*rangeClock]struct{})
}

// track starts watching one range and returns the context it runs under;
// hedge says it may be taken over.
func (w *stallWatch) track(ctx context.Context, hedge bool) (context.Context, *rangeClock) {
	rctx, cancel := context.WithCancelCause(ctx)
	c := &rangeClock{cancel: cancel, hedge: hedge, changed: int64(time.Since(w.base))}
	w.mu.Lock()
	w.live[c] = struct{}{}
	w.mu.Unlock()
	return rctx, c
}

func (w *stallWatch) done(c *rangeClock) {
	w.mu.Lock()
	delete(w.live, c)
	if c.progress.Load() != c.seen { // it delivered bytes since the last tick
		w.lastMove = max(w.lastMove, int64(time.Since(w.base)))
	}
	w.mu.Unlock()
	c.cancel(nil)
}

func (w *stallWatch) run(ctx context.Context) {
	t := time.NewTicker(w.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		w.tick(int64(time.Since(w.base)))
	}
}

// tick looks at the ranges in flight at now (ns since the base): it
// notes their progress, abandons the stalled and takes stragglers over.
func (w *stallWatch) tick(now int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if late := now - w.lastTick - int64(w.every); w.lastTick > 0 && late > int64(w.every) {
		// The watch itself had no CPU for that long: neither had the
		// ranges' copy loops, so it is no silence of theirs.
		for c := range w.live {
			c.changed = min(c.changed+late, now)
		}
		w.lastMove = min(w.lastMove+late, now)
	}
	w.lastTick = now
	idle := w.idle[:0]
	for c := range w.live {
		p := c.progress.Load()
		c.at[c.ticks%len(c.at)] = p
		c.ticks++
		switch {
		case p != c.seen:
			if c.seen > 0 {
				w.addGap(now - c.changed) // between reads, not the wait for the response
			}
			c.seen, c.changed = p, now
			w.lastMove = now
		case now-c.changed > int64(w.timeout):
			c.cancel(errStalled)
		case c.hedge:
			idle = append(idle, c) // silent since the last tick
		}
	}
	if ok, end := w.mayTakeOver(); ok && end {
		w.outliers(now)
	} else if ok && len(idle) > 0 {
		w.takeOver(idle, now)
	}
	w.idle = idle
}

// window is the length, in ticks, over which ranges are compared:
// max(minStraggle, outlierTTFB median times to first byte), at most
// outlierTicks-1.
func (w *stallWatch) window() int {
	win := int(max(int64(minStraggle), outlierTTFB*int64(w.ttfb(0.5))) / int64(w.every))
	return min(max(win, 1), outlierTicks-1)
}

// median returns what the median range in flight received over the
// last win ticks, of those watched that long (0 when fewer than two
// were). Under the lock.
func (w *stallWatch) median(win int) int64 {
	w.moved = w.moved[:0]
	for c := range w.live {
		if m, ok := c.movedOver(win); ok {
			w.moved = append(w.moved, m)
		}
	}
	if len(w.moved) < 2 {
		return 0
	}
	slices.Sort(w.moved)
	return w.moved[len(w.moved)/2]
}

// takeOver cancels the stragglers among the silent ranges during a run,
// the longest silent first, while the budget allows: silent for
// max(minStraggle, 4 x the p99 gap) while peers delivered bytes since it
// fell silent, and still do (within two ticks), and the median range in
// flight moved over the window: when most ranges are silent at once,
// the machine, not a range, is what is slow. Under the lock.
func (w *stallWatch) takeOver(idle []*rangeClock, now int64) {
	if now-w.lastMove > 2*int64(w.every) || w.median(w.window()) == 0 {
		return // most ranges are silent: the machine, not a range, may have stopped
	}
	p99, ttfb99 := w.p99(), int64(w.ttfb(0.99))
	slices.SortFunc(idle, func(a, b *rangeClock) int { return int(a.changed - b.changed) })
	for _, c := range idle {
		if ok, _ := w.mayTakeOver(); !ok || w.lastMove <= c.changed {
			return
		}
		bound := max(int64(minStraggle), 4*p99)
		if c.seen == 0 {
			bound = max(bound, 2*ttfb99) // still waiting for its response
		}
		if now-c.changed > bound {
			w.cut(c)
		}
	}
}

// outliers cancels the stragglers at the end of a run: the ranges that
// received less than 1/outlierShare of what the median range in flight
// did over the window, while that median moved; when it did not, a range
// silent for max(minStraggle, 4 x the p99 gap) since more than a tick
// before some range last moved or finished (ranges stopped together
// fall silent within a tick of each other), or else for lonelyStraggle.
// Under the lock.
func (w *stallWatch) outliers(now int64) {
	win := w.window()
	median := w.median(win)
	p99, ttfb99 := w.p99(), int64(w.ttfb(0.99))
	for c := range w.live {
		if !c.hedge {
			continue
		}
		silent := now - c.changed
		if c.seen == 0 && silent <= 2*ttfb99 {
			continue // still awaiting its response
		}
		var straggler bool
		if median > 0 {
			m, full := c.movedOver(win)
			straggler = full && m*outlierShare < median
		} else {
			bound := int64(lonelyStraggle)
			if w.lastMove > c.changed+int64(w.every) {
				bound = max(int64(minStraggle), 4*p99) // its peers moved on, or finished, after it fell silent
			}
			straggler = silent > bound
		}
		if !straggler {
			continue
		}
		if ok, _ := w.mayTakeOver(); !ok {
			return
		}
		w.cut(c)
	}
}

// cut takes c over, once per attempt. Under the lock.
func (w *stallWatch) cut(c *rangeClock) {
	c.hedge = false
	c.cancel(errTakenOver)
}

func (w *stallWatch) addGap(d int64) {
	w.gaps[w.n%len(w.gaps)] = d
	w.n++
}

// p99 is the 99th percentile of the recent gaps (0 before any).
func (w *stallWatch) p99() int64 {
	n := min(w.n, len(w.gaps))
	if n == 0 {
		return 0
	}
	s := make([]int64, n)
	copy(s, w.gaps[:n])
	slices.Sort(s)
	return s[min(n-1, n*99/100)]
}

// stallCause turns the error of a range cancelled by the watch into
// errStalled, which is retried, or errTakenOver.
func stallCause(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errStalled):
		return errStalled
	case errors.Is(cause, errTakenOver):
		return errTakenOver
	}
	return err
}
