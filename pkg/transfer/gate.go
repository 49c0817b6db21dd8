package transfer

import (
	"cmp"
	"context"
	"sync"
	"time"
)

// gate bounds the requests in flight by a window that follows the
// server (closed-loop concurrency).
//
// The window starts at min(32, the budget) and, while it is full,
// doubles a step at a time up to the budget. A step goes out only once
// the server answered (with data or an error) every request sent under
// the step before, up to the moment that step filled, and at least a
// median time to first byte after it: so the window never sends a step
// before the server had its say on the last, and it crosses a server's
// limit once, by one step. A request still waiting for its answer after
// max(250 ms, 4 median times to first byte) no longer holds the next
// step. With no SlowDown it reaches a budget of 256 in three round
// trips, and the waits for the measures of the first windows where
// they are slow to come (knee.go). Each round trip of the climb leaves slots idle, so a run of
// under a second pays for it: about three times to first byte under
// load, against a window that starts at the budget.
//
// When the server answers SlowDown to a request sent under the current
// window, the window drops to what the server was serving when it
// refused it (see concurrent), always below the window it was sent
// under; a cut after the climb's first lowers it by an eighth at most
// (floor). A SlowDown to another request of the same burst (sent before
// the cut, under the window just cut) may lower it further, to the
// requests in flight when that one was sent (no lower than the floor),
// never raise it; a success of that burst raises it to the requests
// answered and streaming at once, up to the window before the cut. A
// SlowDown to an older request says nothing new. A
// slot freed by a SlowDown is not reused until the window allows, and
// from then on the window grows by one a second while it stays full and
// unthrottled. Not adaptive, the window is the budget. The gate is taken
// once per request, never per buffer of data.
//
// The climb also stops where a step buys no throughput (knee.go): the
// bottleneck is then elsewhere, and more requests in flight only cost
// buffers, connections and CPU.
type gate struct {
	mu       sync.Mutex
	cond     *sync.Cond
	max      int  // the budget
	adaptive bool // false: the window stays at max
	allowed  int  // the window
	start    int  // where an adaptive window starts, at most max
	inFlight int

	// epoch counts the window's cuts: a request carries the epoch it was
	// sent in, so that only a SlowDown to a request sent under the
	// current window cuts it again.
	epoch int64
	// streaming counts the requests in flight answered successfully.
	streaming int
	// ceiling is the window before the last cut: requests sent before
	// it and answered successfully after it may raise the window up to
	// it.
	ceiling int
	// floor is the least the window may drop to until the next cut: 1
	// at the climb's first cut, which must find the server's level from
	// far above it; an eighth below the window at a later cut. Those
	// come while the window probes near the level, where the measure of
	// what a rate serves is noisy (answers bunch behind a rate
	// limiter's bucket, and slots spent on refused requests lower it),
	// and a cut a quarter too deep took as many seconds to probe back
	// as the window lost.
	floor int
	// full: a request waited for the window since it last grew.
	full bool
	// The current step, the requests taken since the window last grew
	// or was cut: seq numbers the requests taken, stepFrom is the last
	// one before the step, stepTo the last one taken before the step's
	// window filled (stepFilled), and stepOut counts those of the step,
	// up to stepTo, the server has not answered yet. The window grows
	// again only once stepOut is 0.
	seq, stepFrom, stepTo int64
	stepFilled            bool
	stepOut               int
	// stepLate is when a step's answers are late: a request that waits
	// that long for its response (a stalled one, before the stall watch
	// takes it over) no longer holds the window back.
	stepLate  time.Time
	probing   bool                 // after a cut: grow by one a second, not by steps
	nextGrow  time.Time            // when a full window may grow next
	growEvery func() time.Duration // the median time to first byte (0: none yet)

	// moved is the bytes the run moved so far: what the knee measures
	// a window's throughput by; unmeasured: none (moved is always 0),
	// and no step waits for a measure.
	moved      func() int64
	unmeasured bool
	kn         knee

	// answers is a ring of the times (since since) of the latest
	// successful answers, newest at answers[last]: how many the server
	// answered within a time to first byte is what it serves at once
	// under a rate limit.
	answers []time.Duration
	last    int
	kept    int // how many of answers hold a time
	// heardAll counts the successful answers, leastTTFB is the least
	// time to first byte among them, less the wait for a new connection
	// (a handshake is the client's, not the server's queue; 0: none
	// yet).
	heardAll  int
	leastTTFB time.Duration

	// The in-flight time integral and peak, for Summary.
	since   time.Time
	area    time.Duration // sum of inFlight x time
	peak    int
	lastAdd time.Time
}

// slot is a request's place under the window: the epoch it was taken
// in, and whether the server answered it successfully.
type slot struct {
	epoch int64
	seq   int64 // the gate's count of requests when it was taken
	// load is the requests in flight when it was taken: those the
	// server was serving when it received this one.
	load int
	// window is the window it was taken under.
	window int
	// connect is how long its request waited for a new connection
	// (Body.Connect): not part of the server's time to first byte.
	connect  time.Duration
	answered bool
	sent     time.Duration // when it was taken, since the gate's start
}

// startWindow is where an adaptive window starts unless
// Options.StartWindow says otherwise.
const startWindow = 32

// stepUp is the window after one step up from w: twice w. A step that
// crosses a server's limit overshoots it by less than the step: from 32
// to 64 against a limit of 48 in flight, 16 requests are refused, once.
// A faster climb (tripling) would have 48 refused there; a slower one
// (by half, then a quarter) takes eight round trips to 256, and on runs
// of under a second cost a quarter of the speed.
func stepUp(w int) int {
	return max(w+1, 2*w)
}

// probeEvery is how often the window grows by one after a cut.
const probeEvery = time.Second

// A step's answers are late lateAnswersTTFB median times to first byte
// after it filled, and at least lateAnswers.
const (
	lateAnswersTTFB = 4
	lateAnswers     = 250 * time.Millisecond
)

// newGate returns a gate under a budget of max requests in flight;
// growEvery is the median time to first byte and moved the bytes the run
// moved so far (nil: none, and the knee never stops the climb).
func newGate(max int, adaptive bool, growEvery func() time.Duration, moved func() int64) *gate {
	return newGateAt(max, 0, adaptive, growEvery, moved)
}

// newGateAt is newGate with an adaptive window that starts at start
// (0: startWindow), at most the budget.
func newGateAt(max, start int, adaptive bool, growEvery func() time.Duration, moved func() int64) *gate {
	now := time.Now()
	unmeasured := moved == nil
	if unmeasured {
		moved = func() int64 { return 0 }
	}
	g := &gate{max: max, adaptive: adaptive, allowed: max, floor: 1, growEvery: growEvery, moved: moved, unmeasured: unmeasured, since: now, lastAdd: now}
	if adaptive {
		g.answers = make([]time.Duration, min(rateSpan*max, maxAnswers))
	}
	g.nextGrow = now
	g.start = min(cmp.Or(start, startWindow), max)
	if adaptive {
		g.allowed = g.start
	}
	g.cond = sync.NewCond(&g.mu)
	return g
}

// acquire waits for room under the window, or for ctx to end.
func (g *gate) acquire(ctx context.Context) (slot, error) {
	g.mu.Lock()
	if g.inFlight < g.allowed && ctx.Err() == nil {
		s := g.take() // room: no waiting, nothing to register
		g.mu.Unlock()
		return s, nil
	}
	g.mu.Unlock()
	stop := context.AfterFunc(ctx, func() {
		g.mu.Lock()
		g.cond.Broadcast()
		g.mu.Unlock()
	})
	defer stop()
	g.mu.Lock()
	defer g.mu.Unlock()
	for g.inFlight >= g.allowed {
		if err := ctx.Err(); err != nil {
			return slot{}, err
		}
		now := time.Now()
		g.fill(now)
		g.grow(now)
		if g.inFlight < g.allowed {
			break
		}
		g.cond.Wait()
	}
	if err := ctx.Err(); err != nil {
		return slot{}, err
	}
	return g.take(), nil
}

// fill records that the window is full: a request waits for room.
// Under the lock.
func (g *gate) fill(now time.Time) {
	g.full = true
	if !g.stepFilled {
		g.stepFilled, g.stepTo = true, g.seq
		g.stepLate = now.Add(max(lateAnswers, lateAnswersTTFB*g.growInterval()))
	}
}

// take counts one more request in flight; under the lock.
func (g *gate) take() slot {
	now := time.Now()
	g.account(now)
	load := g.inFlight
	g.inFlight++
	g.peak = max(g.peak, g.inFlight)
	g.seq++
	if !g.stepFilled {
		g.stepOut++
	}
	return slot{epoch: g.epoch, seq: g.seq, load: load, window: g.allowed, sent: now.Sub(g.since)}
}

// heard records that the server answered the request of s, with data or
// an error; under the lock.
func (g *gate) heard(s slot) {
	if s.seq > g.stepFrom && (!g.stepFilled || s.seq <= g.stepTo) {
		g.stepOut--
	}
}

// newStep starts a step of the window; under the lock.
func (g *gate) newStep() {
	g.stepFrom, g.stepTo, g.stepFilled, g.stepOut = g.seq, 0, false, 0
	g.full, g.kn.on = false, false
}

// account adds the time since the last change to the in-flight integral.
func (g *gate) account(now time.Time) {
	g.area += time.Duration(g.inFlight) * now.Sub(g.lastAdd)
	g.lastAdd = now
}

// answered records that the request of s got a successful response.
func (g *gate) answered(s *slot) {
	s.answered = true
	g.mu.Lock()
	g.heard(*s)
	if len(g.answers) > 0 {
		at := time.Since(g.since)
		g.last = (g.last + 1) % len(g.answers)
		g.answers[g.last] = at
		g.kept = min(g.kept+1, len(g.answers))
		g.heardAll++
		if d := at - s.sent - s.connect; g.leastTTFB == 0 || d < g.leastTTFB {
			g.leastTTFB = max(d, 1)
		}
	}
	if g.stepOut == 0 {
		g.grow(time.Now()) // the step's last answer: the next may go
	}
	g.streaming++
	if g.adaptive && s.epoch == g.epoch-1 && g.allowed < min(g.ceiling, g.streaming) {
		// It succeeded alongside those the cut counted: the window is
		// what is answered and streaming at once, not every success
		// since (one that came after another ended says nothing more).
		g.allowed++
		g.cond.Signal()
	}
	g.mu.Unlock()
}

// release gives the room of s back; throttled says the server asked to
// slow down.
func (g *gate) release(s slot, throttled bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := time.Now()
	g.account(now)
	g.inFlight--
	if s.answered {
		g.streaming--
	} else {
		g.heard(s)
	}
	switch {
	case throttled && g.adaptive && s.epoch == g.epoch:
		g.ceiling, g.floor = g.allowed, 1
		if g.probing {
			// Not the climb's first cut: a refinement, by an eighth at
			// most (see floor).
			g.floor = max(1, g.allowed-max(1, g.allowed/8))
		}
		g.allowed = max(g.floor, min(g.allowed-1, g.concurrent(s, now)))
		g.epoch++
		g.newStep()
		g.probing, g.nextGrow = true, now.Add(probeEvery)
		g.kn = knee{} // the server set the window: no knee holds it now
	case throttled && g.adaptive && s.epoch == g.epoch-1:
		// Sent with the request that cut the window: it may say the
		// server held fewer when it was sent. Not what it serves now:
		// the cut counted that already, and in a storm few answers
		// come back, so a second count would cut far below the rate.
		g.allowed = max(g.floor, min(g.allowed, max(s.load, g.streaming)))
	default:
		g.grow(now)
	}
	if g.inFlight < g.allowed {
		g.cond.Signal() // a slot freed by a SlowDown only when the window allows
	}
}

// concurrent is what the server served alongside the throttled request
// of s: the requests in flight when it was sent (which the server was
// serving, or about to, when it refused it), but no more than it is
// serving successfully now: those streaming, and as many as it answered
// successfully per median time to first byte over the last rateSpan of
// them (waiting for their first byte then). Under a limit on requests
// in flight the first is the limit; under a limit on requests per second
// the load counts every request the window let out, the second what the
// rate lets through. Never fewer than those streaming; the load alone
// while nothing was answered. Under the lock.
func (g *gate) concurrent(s slot, now time.Time) int {
	d := g.growInterval()
	within := g.answeredWithin(now.Sub(g.since), rateSpan*d)
	serving := g.streaming + (within+rateSpan-1)/rateSpan
	if serving == 0 {
		return s.load // nothing answered yet: the load is all there is
	}
	return max(g.streaming, min(s.load, serving))
}

// rateSpan is how many median times to first byte the answers that
// measure a rate are counted over (their mean per time to first byte is
// what the rate serves at once): answers bunch behind a rate limiter, and
// one time to first byte alone caught as few as 19 where the rate
// sustains 33.
const rateSpan = 4

// maxAnswers bounds the ring of answer times.
const maxAnswers = 4096

// answeredWithin counts the successful answers in the d before now (both
// since the gate's start); 0 if d is 0. Under the lock.
func (g *gate) answeredWithin(now, d time.Duration) int {
	if d <= 0 {
		return 0
	}
	n, i := 0, g.last
	for n < g.kept && g.answers[i] >= now-d {
		n++
		i = (i - 1 + len(g.answers)) % len(g.answers)
	}
	return n
}

// growInterval is the least time between two steps of a full window:
// the median time to first byte (0 before any response).
func (g *gate) growInterval() time.Duration {
	return g.growEvery()
}

// run grows a full window on time while every request in flight is long
// (no release comes to do it), until ctx ends.
func (g *gate) run(ctx context.Context) {
	if !g.adaptive {
		return
	}
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			g.mu.Lock()
			g.grow(now)
			g.mu.Unlock()
		}
	}
}

// grow widens a full window once the server answered the requests of
// its last step: by stepUp (at most once every median time to first
// byte) at first, by one a second after a SlowDown. Under the lock.
func (g *gate) grow(now time.Time) {
	if !g.adaptive || !g.full {
		return
	}
	if g.probing {
		if g.allowed < g.max && !now.Before(g.nextGrow) {
			g.allowed++
			g.nextGrow = now.Add(probeEvery)
			g.newStep()
			g.cond.Signal()
		}
		return
	}
	if g.climb(now) && g.allowed < g.max && !now.Before(g.nextGrow) {
		g.stepUp(now)
	}
}

// stepUp sends the next step of the climb; under the lock.
func (g *gate) stepUp(now time.Time) {
	old := g.allowed
	g.allowed = min(g.max, stepUp(g.allowed))
	g.nextGrow = now.Add(g.growInterval())
	g.newStep()
	for range g.allowed - old {
		g.cond.Signal()
	}
}

// window says where the window stands: the window, why it is there
// (WindowBudget, WindowKnee, ...) and the knee it found (0: none).
func (g *gate) window() (w int, stop string, knee int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.allowed >= g.max:
		stop = WindowBudget
	case g.kn.at > 0:
		stop = WindowKnee
	case g.epoch > 0:
		stop = WindowSlowDown
	default:
		stop = WindowDemand
	}
	return g.allowed, stop, g.kn.at
}

// bound is the current window.
func (g *gate) bound() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.allowed
}

// inFlightNow is the number of requests holding a slot now.
func (g *gate) inFlightNow() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.inFlight
}

// load returns the mean and the peak of the requests in flight since the
// gate was made.
func (g *gate) load() (mean float64, peak int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := time.Now()
	g.account(now)
	if d := now.Sub(g.since); d > 0 {
		mean = float64(g.area) / float64(d)
	}
	return mean, g.peak
}
