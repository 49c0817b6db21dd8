package transfer

import "time"

// Phase is where the adaptive window stands in its rule.
type Phase uint8

const (
	// PhaseStart: the window is at its start and no step went out yet.
	PhaseStart Phase = iota
	// PhaseClimb: the window steps up (stepUp) once the server answered
	// the step before, each step measured (knee.go).
	PhaseClimb
	// PhaseProbe: the window held at its knee sent a step above it, and
	// measures whether that step pays.
	PhaseProbe
	// PhaseHold: the window holds at its knee, where a step bought no
	// throughput, and samples its throughput per request.
	PhaseHold
	// PhaseBackOff: the server answered SlowDown; the window was cut to
	// what the server served and grows by one every probeEvery.
	PhaseBackOff
)

// String names the phase as --json and the debug log do.
func (p Phase) String() string {
	switch p {
	case PhaseStart:
		return "start"
	case PhaseClimb:
		return "climb"
	case PhaseProbe:
		return "probe"
	case PhaseHold:
		return "hold"
	case PhaseBackOff:
		return "backoff"
	}
	return "unknown"
}

// WindowChange is one transition of the adaptive window: at At since the
// run's start it entered Phase with Window requests allowed in flight.
type WindowChange struct {
	At     time.Duration
	Phase  Phase
	Window int
}

// windowRule is the adaptive window's rule: a pure function of a state
// and an observation, with the run's fixed parameters. The gate (the
// mechanism) samples an observation once per tick, and on the few events
// that change what the rule would decide (a step's last answer, a
// SlowDown, a window that filled), and applies the state it returns.
type windowRule struct {
	max        int  // the budget
	start      int  // where the window starts, at most max
	unmeasured bool // no byte count: no step waits for a measure
}

// windowState is the rule's state: a value, copied in and out of next.
type windowState struct {
	Phase  Phase
	Window int
	// Epoch counts the window's cuts: a request carries the epoch it was
	// sent in, so that only a SlowDown to a request sent under the
	// current window cuts it again.
	Epoch int64
	// Step numbers the steps of the window (a grow or a cut starts one):
	// the mechanism counts the requests of the current step the server
	// has not answered yet (observation.StepOut).
	Step int64
	// Ceiling is the window before the last cut: requests sent before it
	// and answered successfully after it may raise the window up to it.
	Ceiling int
	// Floor is the least the window may drop to until the next cut: 1
	// at the climb's first cut, which must find the server's level from
	// far above it; an eighth below the window at a later cut. Those
	// come while the window probes near the level, where the measure of
	// what a rate serves is noisy (answers bunch behind a rate
	// limiter's bucket, and slots spent on refused requests lower it),
	// and a cut a quarter too deep took as many seconds to probe back
	// as the window lost.
	Floor int
	// NextGrow is when a full window may grow next.
	NextGrow time.Duration
	// Level is what the server served before the back-off: the window
	// the first cut set, lowered only by a cut while the window
	// recovers to it (Recovering). CutAt is when the last cut came.
	Level      int
	Recovering bool
	CutAt      time.Duration
	kn         knee
}

// observation is what the mechanism measured, sampled at Now (since the
// gate's start). Counts of events (Throttled, SucceededPrev, ...) are
// those since the last sample.
type observation struct {
	Now      time.Duration
	InFlight int
	// Area is the integral of the requests in flight over time since the
	// gate's start, Moved the bytes the run moved so far.
	Area  time.Duration
	Moved int64
	// StreamArea is the same integral of the requests streaming (answered
	// successfully, not yet given back).
	StreamArea time.Duration
	// TTFB is the median time to first byte (0: none yet), LeastTTFB
	// the least one less the wait for a new connection (a handshake is
	// the client's, not the server's queue; 0: none yet).
	TTFB, LeastTTFB time.Duration
	// Answered counts the successful answers so far; Streaming those of
	// the requests in flight.
	Answered  int64
	Streaming int
	// FirstAnswer is when the first successful answer came (0: none
	// yet).
	FirstAnswer time.Duration
	// Released counts the requests given back so far (the mean bytes a
	// request moves is Moved over it).
	Released int64
	// Full: a request waited for the window in the current step, which
	// filled at FilledAt. StepOut counts the requests of the step taken
	// before it filled that the server has not answered yet.
	Full     bool
	FilledAt time.Duration
	StepOut  int
	// Throttled counts the SlowDowns to requests sent under the current
	// epoch, ThrottledLoad the least load among them (the requests in
	// flight when each was sent); ThrottledPrev and ThrottledPrevLoad
	// the same for the epoch before it. SucceededPrev counts the
	// successes of requests sent under the epoch before.
	Throttled, ThrottledLoad         int
	ThrottledPrev, ThrottledPrevLoad int
	SucceededPrev                    int
	// Recent counts the successful answers in the rateSpan median times
	// to first byte before Now (sampled only with a SlowDown to count).
	Recent int
}

// initial is the state a run starts in.
func (r windowRule) initial() windowState {
	return windowState{Phase: PhaseStart, Window: r.start, Floor: 1}
}

// turn is one application of the rule: the state being changed (a copy
// of next's argument), the observation and the parameters.
type turn struct {
	r windowRule
	o observation
	s windowState
}

// next is the rule: the window's state after observation o.
func (r windowRule) next(s windowState, o observation) windowState {
	t := turn{r: r, o: o, s: s}
	t.slowDowns()
	t.grow()
	return t.s
}

// slowDowns applies the SlowDowns and the late successes observed.
func (t *turn) slowDowns() {
	s, o := &t.s, &t.o
	if o.ThrottledPrev > 0 {
		// Sent with the request that cut the window: it may say the
		// server held fewer when it was sent. Not what it serves now:
		// the cut counted that already, and in a storm few answers
		// come back, so a second count would cut far below the rate.
		s.Window = max(s.Floor, min(s.Window, max(o.ThrottledPrevLoad, o.Streaming)))
	}
	if o.Throttled > 0 {
		s.Ceiling, s.Floor = s.Window, 1
		if s.Phase == PhaseBackOff {
			// Not the climb's first cut: a refinement, by an eighth at
			// most (see Floor).
			s.Floor = max(1, s.Window-max(1, s.Window/8))
		}
		s.Window = max(s.Floor, min(s.Window-1, t.concurrent(o.ThrottledLoad)))
		if s.Phase != PhaseBackOff || s.Recovering {
			s.Level = s.Window // refused on the way back: the server's level is lower
		}
		s.Recovering, s.CutAt = false, o.Now
		s.Epoch++
		t.newStep()
		s.Phase, s.NextGrow = PhaseBackOff, o.Now+probeEvery
		s.kn = knee{} // the server set the window: no knee holds it now
		return
	}
	if o.SucceededPrev > 0 && s.Window < min(s.Ceiling, o.Streaming) {
		// They succeeded alongside those the cut counted: the window is
		// what is answered and streaming at once, not every success
		// since (one that came after another ended says nothing more).
		s.Window = min(s.Window+o.SucceededPrev, s.Ceiling, o.Streaming)
	}
}

// concurrent is what the server served alongside a throttled request
// sent with load requests in flight (which the server was serving, or
// about to, when it refused it), but no more than it is serving
// successfully now: those streaming, and as many as it answered
// successfully per median time to first byte over the last rateSpan of
// them (waiting for their first byte then). Under a limit on requests
// in flight the first is the limit; under a limit on requests per second
// the load counts every request the window let out, the second what the
// rate lets through. Never fewer than those streaming; the load alone
// while nothing was answered.
func (t *turn) concurrent(load int) int {
	serving := t.o.Streaming + (t.o.Recent+rateSpan-1)/rateSpan
	if serving == 0 {
		return load // nothing answered yet: the load is all there is
	}
	return max(t.o.Streaming, min(load, serving))
}

// rateSpan is how many median times to first byte the answers that
// measure a rate are counted over (their mean per time to first byte is
// what the rate serves at once): answers bunch behind a rate limiter, and
// one time to first byte alone caught as few as 19 where the rate
// sustains 33.
const rateSpan = 4

// probeEvery is how often the window grows by one after a cut: a rate
// limiter's bucket refills over about a second, so a faster probe is
// refused before the server's level could rise.
const probeEvery = time.Second

// A step's answers are late lateAnswersTTFB median times to first byte
// after it filled (a request that waits that long for its response, a
// stalled one before the stall watch takes it over, no longer holds the
// window back), and at least lateAnswers: a few ticks of the stall
// watch, so that one slow answer on a quick server does not count.
const (
	lateAnswersTTFB = 4
	lateAnswers     = 250 * time.Millisecond
)

// newStep starts a step of the window: the mechanism counts its
// requests anew.
func (t *turn) newStep() {
	t.s.Step++
	t.o.Full, t.o.StepOut, t.o.FilledAt = false, 0, 0
	t.s.kn.on = false
}

// stepLate is when the answers of the current step are late.
func (t *turn) stepLate() time.Duration {
	return t.o.FilledAt + max(lateAnswers, lateAnswersTTFB*t.o.TTFB)
}

// grow widens a full window once the server answered the requests of
// its last step: by stepUp (at most once every median time to first
// byte) while it climbs, by one every probeEvery after a SlowDown.
func (t *turn) grow() {
	s, o := &t.s, &t.o
	if !o.Full {
		return
	}
	if s.Phase == PhaseBackOff {
		if t.recover() {
			return
		}
		if s.Window < t.r.max && o.Now >= s.NextGrow {
			s.Window++
			s.NextGrow = o.Now + probeEvery
			t.newStep()
		}
		return
	}
	if t.climb() && s.Window < t.r.max && o.Now >= s.NextGrow {
		t.stepUp()
	}
}

// recover doubles a window cut below the server's level back to it
// once no SlowDown came for recoverAfter round trips (a storm ended),
// a step at a time as the climb does; true if it stepped.
func (t *turn) recover() bool {
	s, o := &t.s, &t.o
	calm := o.Now >= s.CutAt+recoverAfter*o.TTFB
	answered := o.StepOut == 0 || o.Now >= t.stepLate()
	if s.Window >= s.Level || !calm || !answered || s.Recovering && o.Now < s.NextGrow {
		return false
	}
	s.Window = min(s.Level, stepUp(s.Window))
	s.Recovering, s.NextGrow = true, o.Now+o.TTFB
	if s.Window >= s.Level {
		s.NextGrow = o.Now + probeEvery // back at the level: probing on from it
	}
	t.newStep()
	return true
}

// recoverAfter is how many median times to first byte without a
// SlowDown end a storm: the refusals of a burst come back within the
// round trip of the requests sent under it, and a rate limiter's
// refusals within the rateSpan its answers are counted over.
const recoverAfter = rateSpan

// stepUp is the window after one step up from w: twice w. A step that
// crosses a server's limit overshoots it by less than the step: from 32
// to 64 against a limit of 48 in flight, 16 requests are refused, once.
// A faster climb (tripling) would have 48 refused there; a slower one
// (by half, then a quarter) takes eight round trips to 256, and on runs
// of under a second cost a quarter of the speed.
func stepUp(w int) int {
	return max(w+1, 2*w)
}

// stepUp sends the next step of the climb.
func (t *turn) stepUp() {
	s := &t.s
	s.Window = min(t.r.max, stepUp(s.Window))
	s.NextGrow = t.o.Now + t.o.TTFB
	if s.Phase == PhaseStart {
		s.Phase = PhaseClimb
	}
	t.newStep()
}

// stop says why a window in state s stands where it does (WindowBudget,
// WindowKnee, ...).
func (r windowRule) stop(s windowState) string {
	switch {
	case s.Window >= r.max:
		return WindowBudget
	case s.kn.at > 0:
		return WindowKnee
	case s.Epoch > 0:
		return WindowSlowDown
	}
	return WindowDemand
}
