package transfer

import (
	"math"
	"time"
)

// Why the window stands where it does at the end of a run (Summary's
// WindowStop).
const (
	// WindowBudget: the window reached the budget (or is fixed at it).
	WindowBudget = "budget"
	// WindowKnee: the climb stopped where a step bought no throughput.
	WindowKnee = "knee"
	// WindowSlowDown: the server set the window by answering SlowDown.
	WindowSlowDown = "slowdown"
	// WindowDemand: the climb never stopped: the requests did not fill
	// the window long enough for it to reach the budget.
	WindowDemand = "demand"
)

// knee is the climb's measure of what each step of the window buys.
//
// Between two steps of the climb the requests that stream are those of
// the window before the last step (the step's wait for their first
// byte), so a window is measured from the moment its step's requests
// were answered, until it moved enough to judge (enough). A step from w
// to 2w pays when the throughput under 2w is at least kneeGain above
// that under w (pays). Where some answer came sooner than kneeSpan (the
// least time to first byte) a step waits for that measure (at most
// kneeWait); where even the quickest answer takes longer, the step goes
// out at once, so the climb is no slower where each step pays, and the
// measure closes at the latest when the next step's requests are
// answered; one that moved too little by then is not judged (the next
// is judged against the level before it), and from then on each step
// waits for its measure (up to kneeWait), so the climb crosses a knee
// by one step, not by the several that went out before a request
// counted its first bytes. A median time to first byte
// above kneeSpan is not enough to step at once: on two loaded cores over
// loopback it reached 20-40 ms while the least stayed under 10 ms, and
// steps sent at once took the window to 128-256 before the first was
// judged. Nor is a long time to first byte always a far server: on a
// loaded CPU it is the requests' queue for the CPU, where a window
// measured while the next step's requests were being served looks
// poorer than it was and every step seems to pay. So at the start
// window, when the median time to first byte is kneeQueue times the
// least (queued), no step goes: the window already holds more than the
// bottleneck serves, and once it was measured it settles at its half
// (kneeFloor at least), not judged against the start window (requests
// that queue move as much when fewer, and a start window's measure of a
// few tens of milliseconds is noisier, by 20-30 % on loopback, than
// what the half could lose); the half's first full sample is the
// knee's throughput per request. When a step does not pay the
// bottleneck is elsewhere (CPU, a disk, a NIC, the server's share) and
// the climb stops: at 2w when 2w still bought kneeHold or more, at w (a
// step back) when it bought less; from the start window, which may hold
// more than it needs, it halves while the half moves as much less
// kneeHold (down to kneeFloor), each half sampled once the wider window
// drained, over kneeDownSpan. A doubling may cross the knee by up to its
// step, so from where the climb stopped otherwise (and from a budget
// whose step bought less than kneeCrossed of its share) it tries a
// quarter below, against the window's first full sample, and keeps each
// quarter that moves as much less kneeHold (down to kneeFloor), sampled
// over a request's mean time in flight (sampleSpan). The window then
// holds there (the knee), sampling its throughput per request in flight;
// it probes a step above the knee every kneeProbeEvery, or at once when
// the throughput per request rose kneeRise over the knee's, the best of
// its full samples, or reached that of the quarter below that moved less
// (the bottleneck went away), or fell to half of the knee's (the requests
// became smaller or slower to answer, where more in flight may pay),
// measures that
// step's window, and climbs on from it if it pays, or goes back to the
// knee. A SlowDown's cut ends the knee: the server sets the window from
// then on.
type knee struct {
	// win is the window whose requests stream over the span measured
	// now, from from, when the run had moved bytes and the gate's
	// in-flight integral was area (win 0: none).
	win   int
	from  time.Duration
	bytes int64
	area  time.Duration
	// prev is the level measured before (w 0: none).
	prev level
	// on: the requests of the window's last step were answered, so the
	// window streams; closing: no step follows, and the window measured
	// now closes kneeSpan after it began.
	on, closing bool
	// at is the knee, the window the climb stopped at (0: none; a step
	// above it is out in PhaseProbe); nextProbe is when the next may go.
	at        int
	nextProbe time.Duration
	// fails counts the probes in a row that found the knee again.
	fails int
	// calm is when the window held no longer drains a wider one: its
	// samples begin then.
	calm time.Duration
	// perReq is the knee's throughput per request in flight.
	perReq float64
	// down: the window is a step below the knee at, measured against
	// best, the knee's window when the climb stopped.
	down bool
	best level
	// trim: the step below is a quarter, not a half (trimDown); budget:
	// it is a quarter below the budget, which is no knee if it moves less.
	trim, budget bool
	// trimDue: the window settled where a quarter below it may move as
	// much; tried against its first full sample (its measure in the
	// climb may have been taken before its requests counted).
	trimDue bool
	// below is the throughput per request in flight of the last trim
	// that moved less than the knee (0: none).
	below float64
	// guess: the step down tests the reading that the start window's
	// requests queue; unqueued: a step down refuted it, and the climb no
	// longer reads the spread of the times to first byte as a queue.
	guess, unqueued bool
	// unjudged: a blind step went out before the window before it
	// moved enough to judge it (see climb).
	unjudged bool
	// counted is when the requests of the last step streamed long enough
	// to have added to the run's count (countLag): the window's measure
	// begins then.
	counted time.Duration
}

// level is what a window moved: its throughput in bytes per second and
// the mean of the requests in flight over the span.
type level struct {
	w        int
	rate     float64
	inFlight float64
	bytes    int64 // moved over the span
	span     time.Duration
	// unit is the most a range in flight may have moved and not counted
	// yet: countEvery, or a request's mean size where requests are
	// smaller (a small object counts its bytes once, when it ends).
	unit float64
}

// enough says whether l moved enough to judge it by: kneeSpan, and
// kneeCounts x countEvery bytes per square root of the requests in
// flight. A range adds its bytes to the run's count every countEvery, so
// each range in flight holds up to that much not yet counted at either
// end of the span, and the sum of those errors grows with the root of
// their number: so measured, a window's throughput is within about 5 %.
func (l level) enough() bool {
	return l.span >= kneeSpan && float64(l.bytes) >= kneeCounts*math.Sqrt(max(1, l.inFlight))*l.unit
}

// kneeSpan is the least time a window's throughput is measured over: at
// 1 GB/s, 20 MB, so that the up to 512 KiB each range in flight moved
// but did not count yet stay a few percent of it. It paces the climb
// only where the time to first byte is shorter (loopback, local copies).
const kneeSpan = 20 * time.Millisecond

// kneeCounts is how many counts of its bytes (countEvery) a window's
// measure needs per square root of the requests in flight (see enough).
const kneeCounts = 8

// kneeWait is the longest a step waits for the measure of the window
// before it: a slow run does not climb slower for it (its steps then go
// out once kneeWait passed, unjudged).
const kneeWait = 5 * kneeSpan

// kneeGain is how much more throughput a step that doubles the window
// must buy to pay (a smaller step, in proportion): more than the
// measure's noise, and little enough that stopping below it costs at
// most a few percent.
const kneeGain = 0.10

// kneeQueue is how many times the least time to first byte the median
// one must be for the climb to read the requests as queued (for the CPU,
// or at the server) and stop: a server far away answers each request
// after about the same time however many are in flight, so the median
// stays near the least; where the requests queue, the more are sent the
// longer they wait.
const kneeQueue = 4

// kneeHold is the least gain of a step that did not pay for the climb
// to stop above it: a step that bought less (within the measure's noise
// of nothing) is stepped back.
const kneeHold = kneeGain / 2

// start begins the measure of window w from now.
func (t *turn) startMeasure(w int) {
	k := &t.s.kn
	k.win, k.from, k.bytes, k.area = w, t.o.Now, t.o.Moved, t.o.Area
}

// measure returns the level measured since startMeasure; false if none.
func (t *turn) measure() (level, bool) {
	k := &t.s.kn
	d := t.o.Now - k.from
	if k.win == 0 || d <= 0 {
		return level{}, false
	}
	n := t.o.Moved - k.bytes
	return level{
		w:        k.win,
		rate:     float64(n) / d.Seconds(),
		inFlight: float64(t.o.Area-k.area) / float64(d),
		bytes:    n,
		span:     d,
		unit:     t.unit(),
	}, true
}

// pays says whether the step from prev to cur bought its throughput.
// Nothing moved under prev says nothing: the climb goes on.
func pays(prev, cur level) bool {
	need := 1 + kneeGain*float64(cur.w-prev.w)/float64(prev.w)
	return prev.rate <= 0 || cur.rate >= prev.rate*need
}

// perRequest is l's throughput per request in flight.
func (l level) perRequest() float64 {
	return l.rate / max(l.inFlight, 1)
}

// climb measures what the steps of the window bought and says whether
// the window may step up now: called while the window is full.
func (t *turn) climb() bool {
	s, o, k := &t.s, &t.o, &t.s.kn
	if k.closing && o.Now < k.counted {
		t.startMeasure(k.win) // its new requests have not counted yet
	}
	if cur, ok := t.measure(); k.closing && ok && t.judgeable(cur) && !t.judgeLast(cur) {
		return false // settled
	}
	if s.Phase == PhaseHold {
		t.hold()
		return false
	}
	if o.StepOut > s.Window/stepStragglers && o.Now < t.stepLate() {
		return false // the last step is not answered yet
	}
	// A step waits for the measure of the window before it where some
	// answer came sooner than the measure (it costs the climb little
	// there), and always above the knee, at the budget, and at the start
	// window when its requests queue; elsewhere it goes at once, and a
	// knee found then steps back from one step further up.
	probe := s.Phase == PhaseProbe
	queued := !probe && s.Window <= min(startWindow, t.r.max) && s.Window < t.r.max && t.queued()
	// A step is blind too where a measure would take longer than
	// kneeWait to count the step's new requests (slow connections).
	// A step to a far server is blind only until one of its windows
	// moved too little to judge by the next step: from then on each
	// step waits for its measure, so the climb crosses a knee by one
	// step, not by the several that go out before a request counts.
	far := o.TTFB >= kneeSpan && (t.r.unmeasured || o.LeastTTFB >= kneeSpan && !queued && !k.unjudged)
	blind := far || !queued && (t.slowCounts() || t.countsLate())
	if !k.on {
		k.on = true
		if !t.turnOn(blind) {
			return false
		}
	}
	step := !k.closing || !probe && s.Window < t.r.max && (blind || o.Now-k.from >= max(kneeWait, t.countSpan()))
	if step && queued {
		// The start window's requests queue: it holds more than the
		// bottleneck serves, and a step would only lengthen the queue.
		// Once measured it settles at its half, unjudged. Higher
		// up, a queue for a CPU that the steps below filled may still
		// stand beside more throughput: the measures judge there.
		cur := k.prev
		if cur.w != s.Window {
			cur, _ = t.measure()
			cur.w = s.Window
		}
		if cur.enough() && cur.w/2 >= kneeFloor {
			// Its half is measured against it: a spread of the times
			// to first byte reads as a queue too, and where the half
			// moves less the climb goes on.
			t.settle(cur)
			t.stepDown(cur)
			k.guess = true
		} else if cur.enough() {
			t.settle(cur)
		}
		return false
	}
	return step
}

// judgeable says whether the measure cur of the last step's window is
// enough to judge it: over countLag too, since the requests of a step
// were sent together and count their bytes together, once a countLag,
// and a shorter measure may hold none of their counts; a probe's over
// sampleSpan too, since it is judged against a sample of the knee taken
// over as long.
func (t *turn) judgeable(cur level) bool {
	return cur.enough() && cur.span >= t.countSpan() && (t.s.Phase != PhaseProbe || cur.span >= t.sampleSpan())
}

// countSpan is the least span a step's window is measured over once the
// steps wait for their measures behind a far server (unjudged): two
// countLag, so that the requests of the step, sent together, count their
// bytes in it twice whatever their phase (over one, 256 requests at
// 12.5 MB/s counted once or not at all, and 512 read as no gain over
// 256), at most kneeSampleMost.
func (t *turn) countSpan() time.Duration {
	if !t.s.kn.unjudged {
		return 0
	}
	return min(kneeSampleMost, 2*t.countLag())
}

// stepStragglers is the share of a step's requests (one in so many of
// the window) that may still wait for their first byte when the next
// step goes: where one request in fifty takes ten times as long, a step
// of 128 waits for a straggler in nine climbs of ten, for up to
// lateAnswers; a SlowDown comes back within the round trip, so the
// few left unanswered hold no refusal the next step would cross.
const stepStragglers = 128

// turnOn starts the measure of the window of the last step, whose
// requests were answered and now stream, judging first the window
// before it if its measure is still open; false if the window settled.
// Before a blind step it waits no kneeSpan: no measure holds the step.
func (t *turn) turnOn(blind bool) bool {
	k := &t.s.kn
	if k.closing {
		// The step went out before the window before it was measured
		// enough: judged now if it moved enough, else not at all.
		cur, ok := t.measure()
		if ok && cur.enough() && !t.judge(cur) {
			return false
		}
		k.unjudged = k.unjudged || !ok || !cur.enough()
	}
	t.startMeasure(t.s.Window)
	k.closing = true
	k.counted = t.o.Now + t.countLag()
	if t.o.TTFB < kneeSpan && !blind {
		t.s.NextGrow = max(t.s.NextGrow, t.o.Now+kneeSpan)
	}
	return true
}

// judgeLast closes the measure cur of the window of the last step, once
// it moved enough, and judges it; false if the window settled.
func (t *turn) judgeLast(cur level) bool {
	k := &t.s.kn
	k.closing = false
	prev := k.prev
	if !t.judge(cur) {
		return false
	}
	t.s.Phase, k.at, k.fails = PhaseClimb, 0, 0 // climbing, again after a probe that paid
	if cur.w >= t.r.max {
		if !crossed(prev, cur) {
			k.win = 0 // the budget paid in full: nothing left to measure
			return true
		}
		// The budget paid, by less than its step would below a knee: a
		// quarter below it is tried as below a knee.
		t.settle(cur)
		k.trimDue, k.budget = true, true
	}
	return true
}

// crossed says whether the step from prev to cur, which paid, bought
// less than kneeCrossed of its share (a doubling, of doubling the
// throughput): the throughput per request fell, so a knee lies within
// the step.
func crossed(prev, cur level) bool {
	if prev.w == 0 || prev.rate <= 0 || prev.w >= cur.w {
		return false
	}
	step := float64(cur.w-prev.w) / float64(prev.w)
	return cur.rate/prev.rate-1 < kneeCrossed*step
}

// kneeCrossed is the share of its step's throughput below which a step
// to the budget crossed a knee: where each request moves as much as
// before (per connection caps) a doubling buys nearly all of it, and a
// window a quarter lower would move a quarter less.
const kneeCrossed = 0.5

// judge compares window cur with the one measured before it and settles
// the window when the step between them did not pay; false if it did
// settle.
func (t *turn) judge(cur level) bool {
	k := &t.s.kn
	if k.prev.w == 0 || k.prev.w >= cur.w || pays(k.prev, cur) {
		k.prev = cur
		return true
	}
	probe := t.s.Phase == PhaseProbe
	if prev := k.prev; probe || cur.rate < prev.rate*(1+kneeHold) {
		t.settle(prev) // it bought nothing: a step back
		switch {
		case probe:
			// The knee again: the next probe waits twice as long.
			k.fails++
			k.nextProbe = t.o.Now + kneeProbeEvery<<min(k.fails, kneeProbeBackoff)
		case prev.w <= min(startWindow, t.r.max):
			t.stepDown(prev) // the climb's first window may hold more than it needs
		default:
			k.trimDue = true // the knee may lie below the step back
		}
	} else {
		t.settle(cur) // it bought a little: hold
		k.trimDue = true
	}
	return false
}

// unit is the most a range in flight moved and did not count yet:
// countEvery, or less where the requests so far moved less each.
func (t *turn) unit() float64 {
	if t.o.Released == 0 {
		return countEvery
	}
	return min(countEvery, float64(t.o.Moved)/float64(t.o.Released))
}

// countLag is how long a new request streams before it adds to the
// run's count (unit bytes, at the throughput per request of the level
// measured before), at most kneeLagMost: a window measured sooner
// misses its new requests' bytes and looks poorer than it is.
func (t *turn) countLag() time.Duration {
	return lagAt(t.s.kn.prev.perRequest(), t.unit())
}

// slowCounts says whether the run's requests so far took kneeWait or
// longer of streaming to count unit bytes each: a measure of a step
// would wait for them longer than the step may. The run's mean says so
// only once it ran kneeWait itself. The rate is over the time requests
// streamed, not the time they waited for their first byte: over both,
// 128 requests at 12.5 MB/s each behind 30 ms to first byte read as
// 5 MB/s 130 ms in, and went blind to 1,024 past a knee at 256.
func (t *turn) slowCounts() bool {
	o := &t.o
	return o.Now >= kneeWait && o.Moved > 0 && o.StreamArea > 0 && lagAt(float64(o.Moved)/o.StreamArea.Seconds(), t.unit()) >= kneeWait
}

// countsLate says whether the run counted nothing kneeFirstCount after
// its first answer: its requests move under countEvery in that time
// each, and a measure of each step would wait for their first counts
// longer than the step's measure itself (kneeSpan) takes.
func (t *turn) countsLate() bool {
	o := &t.o
	return !t.r.unmeasured && o.Moved == 0 && o.FirstAnswer > 0 && o.Now >= o.FirstAnswer+kneeFirstCount
}

// kneeFirstCount is how long after the first answer a run that counted
// nothing steps blind: twice kneeSpan, so at 13 MB/s a request or less
// (countEvery in 40 ms), where each step's measure would take over 60 ms
// of the kneeWait a step waits for it at most.
const kneeFirstCount = 2 * kneeSpan

// lagAt is how long a request moving perReq bytes a second takes to
// count unit bytes, at most kneeLagMost (0 for an unknown rate).
func lagAt(perReq, unit float64) time.Duration {
	if perReq <= 0 {
		return 0
	}
	return min(kneeLagMost, time.Duration(unit/perReq*float64(time.Second)))
}

// kneeLagMost bounds the wait for a step's first counts: at 2 MB/s per
// connection a request counts its first countEvery after 260 ms.
const kneeLagMost = 300 * time.Millisecond

// queued says whether the requests queue where they are served: the
// median time to first byte is kneeQueue times the least one seen, over
// at least the start window's answers.
func (t *turn) queued() bool {
	o := &t.o
	return !t.r.unmeasured && !t.s.kn.unqueued && o.Answered >= int64(t.r.start) && o.LeastTTFB > 0 &&
		o.TTFB >= kneeQueue*o.LeastTTFB
}
