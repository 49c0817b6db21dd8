package transfer

import (
	"cmp"
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// gate bounds the requests in flight by a window that follows the
// server (closed-loop concurrency). It is the mechanism only: slots
// taken and given back with atomic counters (no lock unless a request
// waits for room), the events the rule reads counted as they come, and
// the window the rule (windowRule: window.go, knee.go, hold.go) last set.
// Once per tick, and at once on the events that change its decision (a
// step's last answer, a SlowDown, a window that filled), one goroutine
// samples an observation and applies the rule's next state.
//
// The window starts at min(32, the budget) (Options.StartWindow may say
// otherwise) and, while it is full, doubles a step at a time up to the
// budget. A step goes out only once the server answered (with data or
// an error) every request sent under the step before, up to the moment
// that step filled (but one in stepStragglers of the window), and at
// least a median time to first byte after it:
// so the window never sends a step before the server had its say on the
// last, and it crosses a server's limit once, by one step. A request
// still waiting for its answer after max(250 ms, 4 median times to first
// byte) no longer holds the next step. With no SlowDown it reaches a
// budget of 256 in three round trips, and the waits for the measures of
// the first windows where they are slow to come (knee.go).
//
// When the server answers SlowDown to a request sent under the current
// window, the window drops to what the server was serving when it
// refused it (see turn.concurrent), always below the window it was sent
// under; a cut after the climb's first lowers it by an eighth at most
// (windowState.Floor). A SlowDown to another request of the same burst
// (sent before the cut, under the window just cut) may lower it
// further, to the requests in flight when that one was sent (no lower
// than the floor), never raise it; a success of that burst raises it to
// the requests answered and streaming at once, up to the window before
// the cut. A SlowDown to an older request says nothing new. A slot
// freed by a SlowDown is not reused until the window allows, and from
// then on the window grows by one a second while it stays full and
// unthrottled. Not adaptive, the window is the budget. The gate is
// taken once per request, never per buffer of data.
type gate struct {
	adaptive bool
	rule     windowRule
	since    time.Time
	// clock is the time since the gate's start (a test's simulated
	// network sets its own).
	clock func() time.Duration
	// ttfb is the median time to first byte (0: none yet), read once
	// per sample; moved the bytes the run moved so far.
	ttfb  func() time.Duration
	moved func() int64

	// The hot counters, each on its own cache line: taken and given back
	// by every request.
	inFlight pad64 // requests holding a slot
	allowed  pad64 // the window
	// area is the in-flight integral and its count in one word, so that
	// one read sees both (see areaWord).
	area pad64
	// streamArea is the same integral of the requests streaming (answered
	// successfully, not yet given back).
	streamArea  pad64
	streaming   pad64 // requests in flight answered successfully
	released    pad64 // requests given back so far
	heardAll    pad64 // successful answers so far
	epoch, step pad64 // the rule's, as last applied
	// filled is the step in which a request last waited for room (-1:
	// none), filledAt when (ns since since).
	filled, filledAt pad64
	// out counts, by step (modulo len), the requests of the step taken
	// before it filled that the server has not answered yet.
	out [stepRing]pad64
	// The events since the last sample, by the epoch of the request
	// (modulo len): SlowDowns, the least load among them, successes.
	throttled, throttledLoad, succeeded [epochRing]pad64
	least                               pad64 // least time to first byte, ns (0: none)
	firstAt                             pad64 // when the first successful answer came, ns (0: none)
	peak                                pad64
	waiters                             pad64
	// answers is a ring of the times (ns since since) of the latest
	// successful answers, numbered by answered: how many the server
	// answered within a few times to first byte is what it serves at
	// once under a rate limit.
	answers []atomic.Int64

	mu   sync.Mutex // for waiters only
	cond *sync.Cond
	wake chan struct{} // a sample is due now

	// The rule's state, and the transitions: the sampler's alone, read
	// under stateMu.
	stateMu sync.Mutex
	state   windowState
	changes []WindowChange
}

// pad64 is an atomic counter alone on its cache line.
type pad64 struct {
	atomic.Int64
	_ [56]byte
}

// stepRing and epochRing bound the steps and epochs whose counts are
// kept apart: a request answered more steps later than that (longer
// than the step's answers take to be late) no longer counts.
const (
	stepRing  = 64
	epochRing = 4
)

// tickEvery is how often the sampler applies the rule while nothing
// wakes it: half of kneeSpan, so that a window's measure closes at most
// a tick late.
const tickEvery = kneeSpan / 2

// maxAnswers bounds the ring of answer times: rateSpan times to first
// byte of answers at 1,000 requests answered per time to first byte.
const maxAnswers = 4096

// changesKept bounds the transitions kept for the summary: a run that
// probes every kneeProbeEvery for an hour keeps its first ones.
const changesKept = 256

// startWindow is where an adaptive window starts unless
// Options.StartWindow says otherwise: a step of the climb from it to
// 2 x 32 crosses a limit of 48 in flight by 16 requests, and it reaches
// a budget of 256 in three round trips.
const startWindow = 32

// slot is a request's place under the window: the epoch and step it was
// taken in, and whether the server answered it successfully.
type slot struct {
	epoch int64
	step  int64
	// load is the requests in flight when it was taken: those the
	// server was serving when it received this one.
	load int
	// window is the window it was taken under.
	window int
	// connect is how long its request waited for a new connection
	// (Body.Connect): not part of the server's time to first byte.
	connect time.Duration
	// counted: it is one of its step's requests taken before the step
	// filled, whose answers the next step waits for.
	counted, answered bool
	sent              time.Duration // when it was taken, since the gate's start
}

// newGate returns a gate under a budget of max requests in flight;
// ttfb is the median time to first byte and moved the bytes the run
// moved so far (nil: none, and the knee never stops the climb).
func newGate(max int, adaptive bool, ttfb func() time.Duration, moved func() int64) *gate {
	return newGateAt(max, 0, adaptive, ttfb, moved)
}

// newGateAt is newGate with an adaptive window that starts at start
// (0: startWindow), at most the budget.
func newGateAt(max, start int, adaptive bool, ttfb func() time.Duration, moved func() int64) *gate {
	g := &gate{adaptive: adaptive, since: time.Now(), ttfb: ttfb, moved: moved, wake: make(chan struct{}, 1)}
	g.clock = func() time.Duration { return time.Since(g.since) }
	g.rule = windowRule{max: max, start: min(cmp.Or(start, startWindow), max), unmeasured: moved == nil}
	if moved == nil {
		g.moved = func() int64 { return 0 }
	}
	g.state = g.rule.initial()
	if !adaptive {
		g.state.Window = max
	}
	g.allowed.Store(int64(g.state.Window))
	g.filled.Store(-1)
	for i := range g.throttledLoad {
		g.throttledLoad[i].Store(noLoad)
	}
	if adaptive {
		g.answers = make([]atomic.Int64, min(rateSpan*max, maxAnswers))
		g.changes = []WindowChange{{Phase: g.state.Phase, Window: g.state.Window}}
	}
	g.cond = sync.NewCond(&g.mu)
	return g
}

// noLoad is the least load of no SlowDown.
const noLoad = 1 << 62

// now is the time since the gate's start.
func (g *gate) now() time.Duration { return g.clock() }

// acquire waits for room under the window, or for ctx to end.
func (g *gate) acquire(ctx context.Context) (slot, error) {
	if err := ctx.Err(); err != nil {
		return slot{}, err
	}
	if s, ok := g.tryTake(); ok {
		return s, nil
	}
	return g.wait(ctx)
}

// tryTake takes a slot if the window has room.
func (g *gate) tryTake() (slot, bool) {
	for {
		n := g.inFlight.Load()
		w := g.allowed.Load()
		if n >= w {
			return slot{}, false
		}
		if g.inFlight.CompareAndSwap(n, n+1) {
			return g.took(int(n), int(w)), true
		}
	}
}

// took records a slot taken with load others in flight under window w.
func (g *gate) took(load, w int) slot {
	now := g.now()
	g.area.Add(-now.Microseconds()<<areaShift + 1)
	if p := g.peak.Load(); int64(load+1) > p {
		g.peak.CompareAndSwap(p, int64(load+1)) // a lost race leaves it a request short at most
	}
	st := g.step.Load()
	s := slot{epoch: g.epoch.Load(), step: st, load: load, window: w, sent: now}
	if g.filled.Load() != st {
		s.counted = true
		g.out[st%stepRing].Add(1)
	}
	return s
}

// wait takes a slot once the window has room, or fails when ctx ends.
func (g *gate) wait(ctx context.Context) (slot, error) {
	stop := context.AfterFunc(ctx, func() {
		g.mu.Lock()
		g.cond.Broadcast()
		g.mu.Unlock()
	})
	defer stop()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.waiters.Add(1)
	defer g.waiters.Add(-1)
	for {
		if err := ctx.Err(); err != nil {
			return slot{}, err
		}
		if s, ok := g.tryTake(); ok {
			return s, nil
		}
		g.fill()
		g.cond.Wait()
	}
}

// fill records that the window is full: a request waits for room. The
// first time in a step, the rule is asked at once.
func (g *gate) fill() {
	st := g.step.Load()
	if f := g.filled.Load(); f != st && g.filled.CompareAndSwap(f, st) {
		g.filledAt.Store(int64(g.now()))
		g.poke()
	}
}

// poke asks the sampler for a sample now.
func (g *gate) poke() {
	if !g.adaptive {
		return
	}
	select {
	case g.wake <- struct{}{}:
	default:
	}
}

// heard records that the server answered the request of s, with data or
// an error.
func (g *gate) heard(s slot) {
	if s.counted && g.out[s.step%stepRing].Add(-1) == 0 && s.step == g.step.Load() {
		g.poke() // the step's last answer: the next may go
	}
}

// answered records that the request of s got a successful response.
func (g *gate) answered(s *slot) {
	s.answered = true
	g.streaming.Add(1)
	g.heard(*s)
	if !g.adaptive {
		return
	}
	at := g.now()
	g.streamArea.Add(-at.Microseconds()<<areaShift + 1)
	n := g.heardAll.Add(1)
	g.answers[n%int64(len(g.answers))].Store(int64(at))
	if n == 1 {
		g.firstAt.Store(max(int64(at), 1))
	}
	if d := int64(at - s.sent - s.connect); d >= 0 {
		for l := g.least.Load(); l == 0 || max(d, 1) < l; l = g.least.Load() {
			if g.least.CompareAndSwap(l, max(d, 1)) {
				break
			}
		}
	}
	if s.epoch == g.epoch.Load()-1 {
		g.succeeded[s.epoch%epochRing].Add(1)
		g.poke()
	}
}

// release gives the room of s back; throttled says the server asked to
// slow down.
func (g *gate) release(s slot, throttled bool) {
	now := g.now()
	g.area.Add(now.Microseconds()<<areaShift - 1)
	n := g.inFlight.Add(-1)
	g.released.Add(1)
	if s.answered {
		g.streaming.Add(-1)
		if g.adaptive {
			g.streamArea.Add(now.Microseconds()<<areaShift - 1)
		}
	} else {
		g.heard(s)
	}
	if throttled && g.adaptive {
		if e := g.epoch.Load(); s.epoch == e || s.epoch == e-1 {
			g.throttle(s)
			if s.epoch == e {
				return // a slot freed by a SlowDown only once the window allows
			}
		}
	}
	if g.waiters.Load() > 0 && n < g.allowed.Load() {
		g.mu.Lock()
		g.cond.Signal()
		g.mu.Unlock()
	}
}

// throttle counts a SlowDown to the request of s for the next sample.
func (g *gate) throttle(s slot) {
	i := s.epoch % epochRing
	for l := g.throttledLoad[i].Load(); int64(s.load) < l; l = g.throttledLoad[i].Load() {
		if g.throttledLoad[i].CompareAndSwap(l, int64(s.load)) {
			break
		}
	}
	g.throttled[i].Add(1)
	g.poke()
}

// run applies the rule every tickEvery, and whenever a request asks for
// it, until ctx ends.
func (g *gate) run(ctx context.Context) {
	if !g.adaptive {
		return
	}
	t := time.NewTicker(tickEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-g.wake:
		}
		g.tick()
	}
}

// tick samples an observation, applies the rule and publishes its
// window.
func (g *gate) tick() {
	g.stateMu.Lock()
	defer g.stateMu.Unlock()
	old := g.state
	o := g.observe(old)
	s := g.rule.next(old, o)
	g.apply(old, s)
	if s.Phase != old.Phase && len(g.changes) < changesKept {
		g.changes = append(g.changes, WindowChange{At: o.Now, Phase: s.Phase, Window: s.Window})
	}
	g.state = s
}

// observe samples what the rule reads, for state s; it drains the event
// counts of the epochs s knows. Under stateMu.
func (g *gate) observe(s windowState) observation {
	now := g.now()
	o := observation{Now: now, TTFB: g.ttfb(), Moved: g.moved()}
	o.InFlight = int(g.inFlight.Load())
	o.Area = g.integral(now)
	o.StreamArea = integralOf(g.streamArea.Load(), now)
	o.LeastTTFB = time.Duration(g.least.Load())
	o.Answered = g.heardAll.Load()
	o.FirstAnswer = time.Duration(g.firstAt.Load())
	o.Streaming = int(g.streaming.Load())
	o.Released = g.released.Load()
	o.Full = g.filled.Load() == s.Step
	o.FilledAt = time.Duration(g.filledAt.Load())
	o.StepOut = max(0, int(g.out[s.Step%stepRing].Load()))
	cur, prev := s.Epoch%epochRing, (s.Epoch+epochRing-1)%epochRing
	o.Throttled, o.ThrottledLoad = g.drain(cur)
	if s.Epoch > 0 {
		o.ThrottledPrev, o.ThrottledPrevLoad = g.drain(prev)
		o.SucceededPrev = int(g.succeeded[prev].Swap(0))
	}
	if o.Throttled > 0 {
		o.Recent = g.answeredWithin(now, rateSpan*o.TTFB)
	}
	return o
}

// drain returns and resets the SlowDowns of epoch slot i and their least
// load.
func (g *gate) drain(i int64) (n, load int) {
	n = int(g.throttled[i].Swap(0))
	return n, int(g.throttledLoad[i].Swap(noLoad))
}

// answeredWithin counts the successful answers in the d before now (both
// since the gate's start); 0 if d is 0. Read once per SlowDown sampled,
// never per request.
func (g *gate) answeredWithin(now, d time.Duration) int {
	if d <= 0 {
		return 0
	}
	last := g.heardAll.Load()
	n := 0
	for i := last; i > 0 && last-i < int64(len(g.answers)); i-- {
		if time.Duration(g.answers[i%int64(len(g.answers))].Load()) < now-d {
			break
		}
		n++
	}
	return n
}

// apply publishes state s after old: a new step's counts start at 0, and
// a window with room wakes the requests waiting for it. Not only a wider
// one: a slot freed by a SlowDown under the current window wakes no one
// (release), so where every slot was refused before this sample, the cut
// window has room that no later release will announce. Under stateMu.
func (g *gate) apply(old, s windowState) {
	if s.Step != old.Step {
		g.out[s.Step%stepRing].Store(0)
		g.step.Store(s.Step)
	}
	if s.Epoch != old.Epoch {
		i := (s.Epoch + 1) % epochRing // the epoch after s, whose counts are stale
		g.throttled[i].Store(0)
		g.throttledLoad[i].Store(noLoad)
		g.succeeded[i].Store(0)
		g.epoch.Store(s.Epoch)
	}
	g.allowed.Store(int64(s.Window))
	if g.waiters.Load() > 0 && g.inFlight.Load() < int64(s.Window) {
		g.mu.Lock()
		g.cond.Broadcast()
		g.mu.Unlock()
	}
}

// window says where the window stands: the window, why it is there
// (WindowBudget, WindowKnee, ...) and the knee it found (0: none, and
// none where it stands for another reason: at the budget, a probe's or
// a trim's).
func (g *gate) window() (w int, stop string, knee int) {
	g.stateMu.Lock()
	defer g.stateMu.Unlock()
	stop = g.rule.stop(g.state)
	if stop == WindowKnee {
		knee = g.state.kn.at
	}
	return g.state.Window, stop, knee
}

// phases returns the window's transitions so far: the phase it entered,
// when, and the window then (none where it is not adaptive).
func (g *gate) phases() []WindowChange {
	g.stateMu.Lock()
	defer g.stateMu.Unlock()
	return append([]WindowChange(nil), g.changes...)
}

// bound is the current window.
func (g *gate) bound() int { return int(g.allowed.Load()) }

// inFlightNow is the number of requests holding a slot now.
func (g *gate) inFlightNow() int { return int(g.inFlight.Load()) }

// load returns the mean and the peak of the requests in flight since the
// gate was made.
func (g *gate) load() (mean float64, peak int) {
	now := g.now()
	if now > 0 {
		mean = float64(g.integral(now)) / float64(now)
	}
	return mean, int(g.peak.Load())
}

// The in-flight integral is kept in one word, area: its low areaShift
// bits count the requests in flight, the rest sums, in microseconds,
// the times the requests were given back less the times they were taken
// (a request in flight counts as given back now). A request adds to it
// once when taken and once when given back, and one read sees the sum
// and the count together. At 1,024 in flight it holds 39 hours.
const areaShift = 16

// integral is the in-flight integral from the gate's start to now.
func (g *gate) integral(now time.Duration) time.Duration {
	return integralOf(g.area.Load(), now)
}

// integralOf is the integral to now that the word w (as area) holds.
func integralOf(w int64, now time.Duration) time.Duration {
	n, sum := w&(1<<areaShift-1), w>>areaShift
	return time.Duration(sum+n*now.Microseconds()) * time.Microsecond
}
