package transfer

import (
	"testing"
	"time"
)

// TestWindowRuleTransitions: the rule is a pure function of a state and
// an observation, so each transition is a row, with no clock and no
// goroutine.
func TestWindowRuleTransitions(t *testing.T) {
	ms := time.Millisecond
	r := windowRule{max: 256, start: startWindow}
	blind := windowRule{max: 256, start: startWindow, unmeasured: true}
	for _, c := range []struct {
		name   string
		r      windowRule
		s      windowState
		o      observation
		phase  Phase
		window int
	}{
		{"not full: nothing to decide", r, r.initial(), observation{Now: time.Second, TTFB: 30 * ms}, PhaseStart, startWindow},
		{"the start window answered, nothing to measure: a step", blind, blind.initial(),
			observation{Now: 40 * ms, TTFB: 30 * ms, LeastTTFB: 30 * ms, Full: true}, PhaseClimb, 2 * startWindow},
		{"a step's answers missing: no step", blind, blind.initial(),
			observation{Now: 40 * ms, TTFB: 30 * ms, LeastTTFB: 30 * ms, Full: true, FilledAt: 30 * ms, StepOut: 1}, PhaseStart, startWindow},
		{"a SlowDown: cut to what the server served", r, windowState{Phase: PhaseClimb, Window: 64, Floor: 1},
			observation{Now: time.Second, TTFB: 30 * ms, Throttled: 1, ThrottledLoad: 48, Streaming: 40, Recent: 40}, PhaseBackOff, 48},
		{"a later SlowDown: an eighth at most", r, windowState{Phase: PhaseBackOff, Window: 48, Level: 48, Epoch: 1, Floor: 1},
			observation{Now: time.Second, TTFB: 30 * ms, Throttled: 1, ThrottledLoad: 10, Streaming: 5}, PhaseBackOff, 42},
		{"a storm ended: double back to the level", r, windowState{Phase: PhaseBackOff, Window: 20, Level: 100, Epoch: 3, NextGrow: time.Second},
			observation{Now: recoverAfter*30*ms + ms, TTFB: 30 * ms, Full: true}, PhaseBackOff, 40},
		{"a storm not yet over: hold", r, windowState{Phase: PhaseBackOff, Window: 20, Level: 100, Epoch: 3, CutAt: 100 * ms, NextGrow: time.Second},
			observation{Now: 200 * ms, TTFB: 30 * ms, Full: true}, PhaseBackOff, 20},
		{"at the level: one more every probeEvery", r, windowState{Phase: PhaseBackOff, Window: 100, Level: 100, Epoch: 3, NextGrow: time.Second},
			observation{Now: time.Second, TTFB: 30 * ms, Full: true}, PhaseBackOff, 101},
		{"counted nothing 40 ms after the first answer: a blind step", r, r.initial(),
			observation{Now: 50 * ms, TTFB: 5 * ms, LeastTTFB: 5 * ms, Full: true, Answered: startWindow, FirstAnswer: 6 * ms}, PhaseClimb, 2 * startWindow},
		{"counted nothing 34 ms after it: the step waits for its measure", r, r.initial(),
			observation{Now: 40 * ms, TTFB: 5 * ms, LeastTTFB: 5 * ms, Full: true, Answered: startWindow, FirstAnswer: 6 * ms}, PhaseStart, startWindow},
		{"counted something: the step waits for its measure", r, r.initial(),
			observation{Now: 50 * ms, TTFB: 5 * ms, LeastTTFB: 5 * ms, Full: true, Answered: startWindow, FirstAnswer: 6 * ms, Moved: countEvery}, PhaseStart, startWindow},
		{"the budget: no step", blind, windowState{Phase: PhaseClimb, Window: 256},
			observation{Now: time.Second, TTFB: 30 * ms, LeastTTFB: 30 * ms, Full: true}, PhaseClimb, 256},
	} {
		got := c.r.next(c.s, c.o)
		if got.Phase != c.phase || got.Window != c.window {
			t.Errorf("%s: phase %v, window %d; want %v, %d", c.name, got.Phase, got.Window, c.phase, c.window)
		}
	}
}
