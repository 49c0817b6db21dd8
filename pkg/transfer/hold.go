package transfer

import "time"

// The window held at its knee (PhaseHold): its samples, the halves and
// quarters tried below it, and the probes above it. The climb that
// finds the knee is in knee.go.

// kneeRise is the rise of the throughput per request in flight, over the
// knee's (the best of its full samples), that sends a probe at once: a
// quarter, above the spread of full samples over kneeHoldSpan (about a
// sixth), so a rise that large is the bottleneck moving, not noise.
const kneeRise = 1.25

// kneeFall is the fall of the throughput per request in flight, under
// the knee's, that sends a probe at once: a halving. The knee's level is
// the best of its samples, so a fall is read from a high mark and needs
// a wider margin than a rise: a quarter below it came from noise alone in
// runs held at an aggregate cap, while a mix's 64 KiB objects after its
// 8 MiB parts move a tenth as much per request as they did.
const kneeFall = 2

// kneeFull is the least mean in flight, of the window, a sample needs
// for its throughput per request to send a probe: a sample with fewer
// in flight was taken while the window filled, and its requests still
// waited for their first byte.
const kneeFull = 0.9

// kneeFloor is the least window a step below the knee goes to: 16
// connections at 100 MB/s carry 1.6 GB/s, and fewer save at most 16
// buffers and connections, while each half measured costs the drain of
// the wider window (one request's time) at a lower throughput; on two
// cores over loopback 8 moved less than 16 in most runs.
const kneeFloor = 16

// kneeDownSpan is the least span a window below the knee is measured
// over: its requests were sent together once the wider window drained,
// and stream in step for a while, so a short sample catches them all
// waiting for their first byte, or all streaming.
const kneeDownSpan = 4 * kneeSpan

// kneeHoldSpan is the least span a window held at or below its knee is
// sampled over: a step below the knee is measured over it (its requests
// were sent together once the wider window drained, see kneeDownSpan),
// and so is the throughput per request that sends a probe when it rose
// kneeRise: over 20 ms on two loaded cores it varied by a third from one
// sample to the next, enough to send probes that only found the knee
// again (a step to 32 in a third of the runs of a quarter of a second
// over TLS, each with 16 more handshakes); over 80 ms, by half as much.
const kneeHoldSpan = kneeDownSpan

// sampleSpan is the least span of a sample of a window held, and of a
// probe's measure: kneeHoldSpan and a request's mean time in flight (up
// to kneeSampleMost), so that requests sent together once a wider
// window drained are caught over the whole of their time, not only
// while they wait for their first byte or only while they all stream
// (over 20 ms, a probe to 288 read 4.7 and 6.4 GB/s under a 5 GB/s cap).
// A half below the start window keeps kneeHoldSpan: a step twice as
// large, judged within the same kneeHold, and measured before the run
// has a mean time in flight worth the name.
func (t *turn) sampleSpan() time.Duration {
	o, k := &t.o, &t.s.kn
	if o.Released == 0 || k.down && !k.trim {
		return kneeHoldSpan
	}
	return max(kneeHoldSpan, min(kneeSampleMost, o.Area/time.Duration(o.Released)))
}

// kneeSampleMost bounds a sample's span: a request of 8 MiB at 40 MB/s
// is in flight that long, and slower ones are measured over several
// hundred of them in flight at once.
const kneeSampleMost = 200 * time.Millisecond

// kneeProbeEvery is how often a window held at its knee probes a step
// above it at first: a probe holds a step's requests for one measure
// (about sampleSpan and a round trip), a few percent of the time at the
// knee, and a bottleneck that went away is found within 2 s at worst
// (kneeProbeBackoff lengthens it once probes keep finding the knee).
const kneeProbeEvery = 2 * time.Second

// kneeProbeBackoff bounds the doublings of the wait for the next probe
// after probes that found the knee again: up to 16 s, where a probe's
// measure and drain hold a doubled window a fraction of a percent of the
// time, and a bottleneck that went away still shows at once as a rise
// in the throughput per request (kneeRise).
const kneeProbeBackoff = 3

// settle holds the window at the knee l.
func (t *turn) settle(l level) {
	s, k := &t.s, &t.s.kn
	s.Phase = PhaseHold
	k.at, k.down, k.trim, k.budget, k.trimDue, k.below = l.w, false, false, false, false, 0
	k.prev, k.perReq = level{}, l.perRequest()
	k.nextProbe = t.o.Now + kneeProbeEvery
	s.Window = min(t.r.max, l.w)
	t.newStep()
	k.on = true // nothing to wait for: the window held streams
	t.startMeasure(s.Window)
	k.closing = false
}

// trimDown tries the window a quarter below l, to be measured against
// it (down, trim): a doubling that stopped the climb, or one that paid
// at the budget, may have crossed the knee by up to its step.
func (t *turn) trimDown(l level) {
	k := &t.s.kn
	w := l.w - l.w/4
	if w < kneeFloor || w >= l.w {
		k.down, k.trim = false, false
		return
	}
	k.down, k.trim, k.best = true, true, l
	t.s.Window = w
}

// stepDown halves the window below the knee l, to be measured against
// it (down).
func (t *turn) stepDown(l level) {
	k := &t.s.kn
	if l.w/2 < kneeFloor {
		k.down = false
		return
	}
	k.down, k.best = true, l
	t.s.Window = l.w / 2
}

// hold samples the throughput of a window held at its knee every
// kneeSpan, and sends a probe a step above it when one is due or the
// throughput per request rose kneeRise over the knee's or fell to half.
func (t *turn) hold() {
	s, o, k := &t.s, &t.o, &t.s.kn
	cur, ok := t.measure()
	if o.InFlight > s.Window || ok && cur.inFlight > float64(s.Window) {
		// What a wider window left in flight drains first, and the
		// requests sent once it drained wait a time to first byte.
		t.startMeasure(s.Window)
		k.calm = o.Now + o.TTFB
		return
	}
	if o.Now < k.calm {
		t.startMeasure(s.Window)
		return
	}
	if !ok || !cur.enough() || cur.span < t.sampleSpan() {
		return
	}
	t.startMeasure(s.Window)
	k.closing = false
	if k.down {
		// A step below the knee: kept, and the next one tried, when it
		// moves as much as the best of the knee and the halves kept, less
		// kneeHold; else back.
		switch {
		case cur.rate >= k.best.rate*(1-kneeHold):
			k.at, k.perReq, k.guess, k.budget = s.Window, cur.perRequest(), false, false
			kept := level{w: s.Window, rate: max(k.best.rate, cur.rate)}
			if k.trim {
				t.trimDown(kept)
			} else if t.stepDown(kept); !k.down {
				t.trimDown(kept) // halved as far as it holds: a quarter more
			}
		case k.guess:
			// The start window's requests did not queue: fewer moved
			// less. The climb goes on from the start window.
			best := k.best
			s.Window, s.Phase = k.at, PhaseClimb
			k.down, k.guess, k.unqueued, k.at, k.prev = false, false, true, 0, best
			t.newStep()
			return
		case !k.trim:
			// The half moved less: a quarter below the knee may not.
			s.Window = k.at
			t.trimDown(k.best)
		default:
			k.down, k.trim, s.Window = false, false, k.at
			// The requests that refill the knee wait a time to first
			// byte: a sample of them then would read the knee poorer,
			// and a probe judged against it pay.
			k.calm = o.Now + o.TTFB
			if k.perReq < (1-kneeHold)*cur.perRequest() {
				// Each request moved more there: a rise at the knee to
				// as much is the bottleneck going away (see rose).
				k.below = cur.perRequest()
			}
			if k.budget {
				k.at, k.budget = 0, false // at the budget, no knee
			}
		}
		t.startMeasure(s.Window) // the next sample is of the window now
		return
	}
	// A sample taken while the window filled after a change says
	// nothing of the throughput per request: only a full one counts.
	full := cur.inFlight >= kneeFull*float64(s.Window)
	if k.trimDue && full {
		k.trimDue = false
		if t.trimDown(cur); k.down {
			t.startMeasure(s.Window)
			return
		}
	}
	if k.perReq == 0 {
		// Settled without a measure of its own (the start window
		// queued): the first full sample is the knee's.
		if full {
			k.perReq = cur.perRequest()
		}
		return
	}
	// Or it reached the throughput per request of the trim below the
	// knee that moved less: the bottleneck no longer binds the knee.
	rose := full && (cur.perRequest() >= kneeRise*k.perReq || k.below > 0 && cur.perRequest() >= (1-kneeHold)*k.below)
	// A fall to kneeFall below says the requests changed (smaller, or
	// answered later: a mix's small objects after its large ones), where
	// more in flight may pay though it did not at the knee; a probe that
	// does not pay settles on the fallen level, so it is not sent again
	// for it.
	fell := full && cur.perRequest()*kneeFall <= k.perReq
	if full && !rose && !fell {
		// The knee's level is the best of its full samples: the first
		// may have been taken while the window's connections were still
		// being made, and a rise over it alone says little.
		k.perReq = max(k.perReq, cur.perRequest())
	}
	if s.Window >= t.r.max || o.Now < k.nextProbe && !rose && !fell {
		return
	}
	k.prev, k.nextProbe = cur, o.Now+kneeProbeEvery
	s.Phase = PhaseProbe
	t.stepUp()
}
