package transfer

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// stallWatch watches the ranges in flight for two kinds of silence. Each
// range keeps a progress count that the copy loop bumps as data arrives
// (an atomic add, no clock read), and one goroutine, ticking every
// watchTick, notes when each count last moved and how long the gaps
// between moves were.
//
//   - A straggler is a range that delivered nothing (its next bytes, or
//     its response, for at least 2 x the p99 time to first byte) for
//     max(minStraggle, 4 x the p99 gap between reads of the ranges in
//     flight) while others progressed: it is taken over, cancelled and
//     its remaining bytes asked for on a new connection from the byte it
//     reached (errTakenOver, retried at once and not counted as an
//     attempt). At the end of a run, when nothing is left to plan and
//     slots are idle, the bound is max(endStraggle, 2 x the p99 gap),
//     or at least lonelyStraggle when no range delivered anything since
//     this one fell silent (the last ranges finishing count: a range
//     left alone by its finished peers is singled out). Takeovers are
//     at most about 5% of the requests. A range the sink's order window
//     or the bandwidth cap may hold back is never taken over.
//   - A stalled range delivered nothing for the stall timeout, whatever
//     its peers do (a dead connection): it is abandoned and retried as an
//     error (errStalled), between one timeout and one timeout plus a tick
//     after its last byte.
type stallWatch struct {
	timeout time.Duration
	base    time.Time
	// mayTakeOver says whether one more takeover fits the budget, and
	// whether the run is at its end (nothing left to plan, idle slots).
	mayTakeOver func() (ok, end bool)
	// ttfb99 is the p99 time to first byte of the run's requests.
	ttfb99 func() time.Duration

	mu   sync.Mutex
	live map[*rangeClock]struct{}
	// gaps holds the most recent gaps between moves of ranges' counts
	// (ns), a ring; n counts the gaps seen.
	gaps [512]int64
	n    int
	// lastMove is when some range last delivered bytes (ns since base):
	// a range silent since before it was singled out.
	lastMove int64
}

type rangeClock struct {
	progress atomic.Int64 // bumped by touch
	cancel   context.CancelCauseFunc
	// hedge says the range may be taken over.
	hedge bool
	// Kept by the watch, under its mutex: the progress it last saw and
	// when (nanoseconds since the watch's base) that value was new.
	seen    int64
	changed int64
}

const (
	// watchTick is how often the watch looks at the ranges in flight.
	watchTick = 50 * time.Millisecond
	// minStraggle is the least silence that makes a straggler.
	minStraggle = 250 * time.Millisecond
	// endStraggle is the least silence that makes a straggler at the end
	// of a run, when slots are idle: a takeover then costs no other
	// range a slot.
	endStraggle = 100 * time.Millisecond
	// lonelyStraggle is the least silence that makes a straggler at the
	// end of a run when no other range progresses (a busy machine may
	// leave every range silent that long).
	lonelyStraggle = time.Second
)

// errTakenOver reports a range the watch took over as a straggler.
var errTakenOver = errors.New("taken over: slower than its peers")

// touch records that data arrived.
func (c *rangeClock) touch() { c.progress.Add(1) }

func (w *stallWatch) init(timeout time.Duration, mayTakeOver func() (ok, end bool), ttfb99 func() time.Duration) {
	w.timeout, w.base, w.mayTakeOver, w.ttfb99 = timeout, time.Now(), mayTakeOver, ttfb99
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
	t := time.NewTicker(min(watchTick, max(w.timeout/4, 10*time.Millisecond)))
	defer t.Stop()
	var idle []*rangeClock
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := int64(time.Since(w.base))
		idle = idle[:0]
		w.mu.Lock()
		for c := range w.live {
			switch p := c.progress.Load(); {
			case p != c.seen:
				if c.seen > 0 {
					w.addGap(now - c.changed) // between reads, not the wait for the response
				}
				c.seen, c.changed = p, now
				w.lastMove = now
			case now-c.changed > int64(w.timeout):
				c.cancel(errStalled)
			case c.hedge && now-c.changed > int64(endStraggle):
				idle = append(idle, c)
			}
		}
		if len(idle) > 0 {
			w.takeOver(idle, now)
		}
		w.mu.Unlock()
	}
}

// takeOver cancels the stragglers among the idle ranges, the longest
// silent first, while the budget allows: when peers delivered bytes
// since the range fell silent (others progressing, or the last ones
// finishing), or at the end of the run. Under the lock.
func (w *stallWatch) takeOver(idle []*rangeClock, now int64) {
	p99, ttfb99 := w.p99(), int64(w.ttfb99())
	slices.SortFunc(idle, func(a, b *rangeClock) int { return int(a.changed - b.changed) })
	for _, c := range idle {
		peers := w.lastMove > c.changed
		ok, end := w.mayTakeOver()
		if !ok || !peers && !end {
			return
		}
		bound := max(int64(minStraggle), 4*p99)
		if end {
			bound = max(int64(endStraggle), 2*p99)
		}
		if !peers {
			bound = max(bound, int64(lonelyStraggle))
		}
		if c.seen == 0 {
			bound = max(bound, 2*ttfb99) // still waiting for its response
		}
		if now-c.changed <= bound {
			continue
		}
		c.hedge = false // once per attempt
		c.cancel(errTakenOver)
	}
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
