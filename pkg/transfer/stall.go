package transfer

import (
	"cmp"
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
// Ranges are compared over the window, the last max(minStraggle,
// outlierTTFB x the median time to first byte), and only over ticks of
// their body, after their first bytes (not over the wait for a
// response), and only while the median range in flight moved over each
// half of the window (ranges resuming from a common pause do so within
// a tick or two, not all before the same tick).
//
//   - During a run, a straggler is a range that delivered nothing (its
//     next bytes, or its response, for at least 2 x the p99 time to
//     first byte) for max(minStraggle, 4 x the p99 gap between reads of
//     the ranges in flight), or whose body received nothing over the
//     window, while others progressed since and still do, the median
//     range among them too (so not while most are silent).
//   - At the end of a run (nothing left to plan, idle slots), a
//     straggler is an outlier among the ranges in flight: over the
//     window its body received less than 1/outlierShare of what the
//     median range did, and that median moved (a range still awaiting
//     its response is one after the window and 2 x the p99 time to
//     first byte). Ranges all slow alike (a machine short of CPU, a
//     loaded link) are no outliers: none is taken over. When the median
//     did not move (a range left alone, or most silent), a range is a
//     straggler once silent for max(minStraggle, 2 x the p99 gap) if
//     some range delivered or finished more than a tick after it fell
//     silent, else for lonelyStraggle.
//   - Stragglers found together are a crowd when more than max(crowdMin,
//     1/crowdShare of the ranges in flight): ranges that lag together
//     (a process, or a relay before the server, short of CPU) say the
//     machine is slow, not those ranges, and none is taken over then,
//     nor for max(the window, 2 x the p99 gap) after. Ranges left alone
//     at the end, silent since their peers finished, are no crowd.
//   - A stalled range delivered nothing for the stall timeout, whatever
//     its peers do (a dead connection): it is abandoned and retried as an
//     error (errStalled), between one timeout and one timeout plus a tick
//     after its last byte.
//
// A straggler is taken over: cancelled and its remaining bytes asked
// for on a new connection from the byte it reached (errTakenOver,
// retried at once and not counted as an attempt). Takeovers are at most
// about 5% of the requests, counted as the watch cuts them (one tick
// may find several). A range the sink's order window or the
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
	// crowded is when the watch last found a crowd of stragglers (ns
	// since base; 0: never).
	crowded int64
	// moved is scratch for the end of a run's outliers: what each range
	// received over the window.
	moved []int64
	idle  []*rangeClock // scratch: the ranges silent since the last tick
	found []*rangeClock // scratch: the stragglers of a tick
	// taken counts the ranges the watch took over, as it cuts them
	// (the budget must see a cut before its range returns: one tick may
	// find several).
	taken atomic.Int64
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
	// body is the tick count at which the watch first saw bytes of the
	// range (0: none yet): a range is compared with its peers over ticks
	// of its body only, not over its wait for the response.
	body int
}

// moved returns the bytes the range received from k ticks ago to j
// ticks ago (k > j >= 0), and whether its body streamed that long (its
// first bytes seen k ticks ago or more). Under the watch's lock.
func (c *rangeClock) moved(k, j int) (int64, bool) {
	if c.body == 0 || c.ticks-k < c.body {
		return 0, false
	}
	n := len(c.at)
	return c.at[(c.ticks-1-j)%n] - c.at[(c.ticks-1-k)%n], true
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
	// crowdMin, crowdShare: when more than max(crowdMin, 1/crowdShare of
	// the ranges in flight) are stragglers at one tick, none is taken
	// over: ranges that lag together (a process or a relay short of CPU)
	// say the machine is slow, not those ranges.
	crowdMin   = 4
	crowdShare = 32
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
			} else {
				c.body = c.ticks
			}
			c.seen, c.changed = p, now
			w.lastMove = now
		case now-c.changed > int64(w.timeout):
			c.cancel(errStalled)
		case c.hedge:
			idle = append(idle, c) // silent since the last tick
		}
	}
	w.idle = idle
	ok, end := w.mayTakeOver()
	switch {
	case !ok:
	case end:
		found, alone := w.outliers(now)
		w.takeOver(found, !alone, now)
	default:
		w.takeOver(w.stragglers(idle, now), true, now)
	}
}

// window is the length, in ticks, over which ranges are compared:
// max(minStraggle, outlierTTFB median times to first byte), at most
// outlierTicks-1.
func (w *stallWatch) window() int {
	win := int(max(int64(minStraggle), outlierTTFB*int64(w.ttfb(0.5))) / int64(w.every))
	return min(max(win, 1), outlierTicks-1)
}

// median returns what the median range in flight received from k
// ticks ago to j ticks ago, of those whose body streamed that long (0
// when fewer than two did). Under the lock.
func (w *stallWatch) median(k, j int) int64 {
	w.moved = w.moved[:0]
	for c := range w.live {
		if m, ok := c.moved(k, j); ok {
			w.moved = append(w.moved, m)
		}
	}
	if len(w.moved) < 2 {
		return 0
	}
	slices.Sort(w.moved)
	return w.moved[len(w.moved)/2]
}

// stragglers returns the stragglers among the silent ranges during a
// run, while peers delivered bytes since each fell silent and still do
// (within two ticks), and the median range in flight moved over the
// window (when most ranges are silent at once, the machine, not a
// range, is what is slow): a range silent for max(minStraggle, 4 x the
// p99 gap) (2 x the p99 time to first byte too while it awaits its
// response), or one whose body received nothing over the whole window
// while the median range moved over each half of it (ranges that
// resume together from a common pause do so within a tick, not all
// before the same tick). Under the lock.
func (w *stallWatch) stragglers(idle []*rangeClock, now int64) []*rangeClock {
	win := w.window()
	if now-w.lastMove > 2*int64(w.every) || w.median(win, 0) == 0 {
		return nil
	}
	steady := w.median(win, win/2) > 0
	p99, ttfb99 := w.p99(), int64(w.ttfb(0.99))
	found := w.found[:0]
	for _, c := range idle {
		if w.lastMove <= c.changed {
			continue // nothing moved since it fell silent
		}
		bound := max(int64(minStraggle), 4*p99)
		if c.seen == 0 {
			bound = max(bound, 2*ttfb99) // still waiting for its response
		}
		m, full := c.moved(win, 0)
		if now-c.changed > bound || steady && full && m == 0 {
			found = append(found, c)
		}
	}
	w.found = found
	return found
}

// outliers returns the stragglers at the end of a run: the ranges whose
// body received less than 1/outlierShare of what the median range in
// flight did over the window, or that still await their response after
// the window and 2 x the p99 time to first byte, while that median
// moved over each half of the window; when it did not move at all, a
// range silent for max(minStraggle, 2 x the p99 gap) since more than a
// tick before some range last moved or finished (ranges stopped
// together fall silent within a tick of each other), or else for
// lonelyStraggle; alone says it is the latter, stragglers by silence,
// not by comparison with moving peers. Under the lock.
func (w *stallWatch) outliers(now int64) (found []*rangeClock, alone bool) {
	win := w.window()
	median := w.median(win, 0)
	steady := median > 0 && w.median(win, win/2) > 0
	p99, ttfb99 := w.p99(), int64(w.ttfb(0.99))
	found = w.found[:0]
	for c := range w.live {
		if !c.hedge {
			continue
		}
		silent := now - c.changed
		if c.seen == 0 && silent <= 2*ttfb99 {
			continue // still awaiting its response
		}
		var straggler bool
		switch {
		case median > 0 && c.seen == 0:
			straggler = steady && silent > int64(win)*int64(w.every)
		case median > 0:
			m, full := c.moved(win, 0)
			straggler = steady && full && m*outlierShare < median
		default:
			bound := int64(lonelyStraggle)
			if w.lastMove > c.changed+int64(w.every) {
				bound = max(int64(minStraggle), 2*p99) // its peers moved on, or finished, after it fell silent
			}
			straggler = silent > bound
		}
		if straggler {
			found = append(found, c)
		}
	}
	w.found = found
	return found, median == 0
}

// takeOver cuts the stragglers of a tick, the longest silent first,
// while the budget allows. Stragglers found against moving peers (peers)
// are none taken over when they are a crowd (crowdMin, crowdShare), nor
// for max(the window, 2 x the p99 gap) after a crowd (the ranges of a
// common lull resume one by one, not together); ranges left alone at the
// end, silent since their peers finished, are no crowd however many.
// Under the lock.
func (w *stallWatch) takeOver(found []*rangeClock, peers bool, now int64) {
	if peers && len(found) > max(crowdMin, len(w.live)/crowdShare) {
		w.crowded = now // many lag at once: the machine, not those ranges, is slow
		return
	}
	if peers && w.crowded > 0 && now-w.crowded <= max(int64(w.window())*int64(w.every), 2*w.p99()) {
		return
	}
	slices.SortFunc(found, func(a, b *rangeClock) int { return cmp.Compare(a.changed, b.changed) })
	for _, c := range found {
		if ok, _ := w.mayTakeOver(); !ok {
			return
		}
		w.cut(c)
	}
}

// cut takes c over, once per attempt. Under the lock.
func (w *stallWatch) cut(c *rangeClock) {
	c.hedge = false
	w.taken.Add(1)
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
