package transfer

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// bottleneck is a server behind a bottleneck, in a synctest bubble: a
// request is answered after ttfb, then streams its size at perConn bytes
// a millisecond while at most capacity() requests stream, their share of
// capacity() x perConn when more do. Demand never ends: one dispatcher,
// as the engine's, sends a request whenever the gate lets it.
type bottleneck struct {
	g        *gate
	cancel   context.CancelFunc
	ttfb     time.Duration
	perConn  int64
	size     int64
	capacity func() int64
	moved    atomic.Int64
	throttle atomic.Bool // answer the next request SlowDown
	small    atomic.Bool // requests move 64 KiB each instead of size

	mu     sync.Mutex
	active map[*int64]chan struct{}
}

func newBottleneck(budget int, ttfb time.Duration, capacity func() int64) *bottleneck {
	return newQueuedBottleneck(budget, ttfb, ttfb, capacity)
}

// newQueuedBottleneck is newBottleneck where the median time to first
// byte the gate is told is median, not ttfb: its requests queue, as on a
// loaded CPU, most of them waiting far longer than the first.
func newQueuedBottleneck(budget int, ttfb, median time.Duration, capacity func() int64) *bottleneck {
	ctx, cancel := context.WithCancel(context.Background())
	b := &bottleneck{cancel: cancel, ttfb: ttfb, perConn: 64 << 10, size: 4 << 20, capacity: capacity, active: map[*int64]chan struct{}{}}
	b.g = newGate(budget, true, func() time.Duration { return median }, b.moved.Load)
	go b.g.run(ctx)
	go b.serve(ctx)
	go func() {
		for {
			s, err := b.g.acquire(ctx)
			if err != nil {
				return
			}
			go b.request(ctx, s)
		}
	}()
	return b
}

// stop ends the clients and the server, and lets them return.
func (b *bottleneck) stop() {
	b.cancel()
	time.Sleep(time.Second)
}

// request is one request of slot s, from sending it to its last byte.
func (b *bottleneck) request(ctx context.Context, s slot) {
	time.Sleep(b.ttfb)
	if b.throttle.CompareAndSwap(true, false) {
		b.g.release(s, true)
		return
	}
	b.g.answered(&s)
	left, done := b.size, make(chan struct{})
	if b.small.Load() {
		left = 64 << 10
	}
	b.mu.Lock()
	b.active[&left] = done
	b.mu.Unlock()
	select {
	case <-done:
	case <-ctx.Done():
	}
	b.g.release(s, false)
}

// serveEvery is how often serve moves the streaming requests' bytes:
// fine enough that whether a sample of the gate comes before or after
// the bytes of the same instant moves a measure of kneeSpan by well
// under kneeGain (a millisecond's bytes were 5 % of it at either end).
const serveEvery = 100 * time.Microsecond

// serve moves the streaming requests' bytes every serveEvery.
func (b *bottleneck) serve(ctx context.Context) {
	t := time.NewTicker(serveEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		b.mu.Lock()
		n := int64(len(b.active))
		if n > 0 {
			each := b.perConn * min(n, b.capacity()) / n / int64(time.Millisecond/serveEvery)
			for left, done := range b.active {
				k := min(each, *left)
				*left -= k
				b.moved.Add(k)
				if *left == 0 {
					close(done)
					delete(b.active, left)
				}
			}
		}
		b.mu.Unlock()
	}
}

// TestGateStopsWhereThroughputDoes: 40 requests streaming at once move
// all a server can; the climb from 32 stops at the step that bought
// nothing more, below the budget, and holds there through its probes.
func TestGateStopsWhereThroughputDoes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBottleneck(256, 5*time.Millisecond, func() int64 { return 40 })
		time.Sleep(time.Second)
		w, stop, knee := b.g.window()
		if stop != WindowKnee || knee < 40 || knee > 2*40 || w != knee {
			t.Fatalf("window %d, stop %q, knee %d: want it held at a knee between 40 and 80", w, stop, knee)
		}
		// Probes a step above (every kneeProbeEvery) buy nothing: back to
		// the knee.
		time.Sleep(2*kneeProbeEvery + 50*time.Millisecond)
		if w2, stop2, knee2 := b.g.window(); w2 != w || stop2 != WindowKnee || knee2 != knee {
			t.Fatalf("after its probes the window is %d (%q, knee %d), want it back at %d", w2, stop2, knee2, w)
		}
		b.stop()
		mean, peak := b.g.load()
		t.Logf("knee %d, in flight: mean %.1f, peak %d", knee, mean, peak)
		if peak >= 256 || mean > 1.25*float64(knee) {
			t.Errorf("in flight: mean %.1f, peak %d; want the mean near the knee %d and the peak below the budget", mean, peak, knee)
		}
	})
}

// TestGateStepsBelowTheStartWhereFewerServeAsMuch: 12 requests
// streaming at once move all the server can; the window starts at 32,
// finds the first step bought nothing, and halves while the throughput
// holds: to 16, not to 8, which moves less.
func TestGateStepsBelowTheStartWhereFewerServeAsMuch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBottleneck(256, 5*time.Millisecond, func() int64 { return 12 })
		defer b.stop()
		time.Sleep(time.Second)
		if w, stop, knee := b.g.window(); w != 16 || stop != WindowKnee || knee != 16 {
			t.Fatalf("window %d, stop %q, knee %d: want it held at 16, the least window that moves as much as 32", w, stop, knee)
		}
	})
}

// TestGateStopsWhereRequestsQueue: the median time to first byte is 8
// times the least (the requests queue for what serves them), so the
// climb sends no step at all: once the start window was measured the
// window steps down to its half, which moves as much (6 streaming at
// once move all there is), and holds it as its knee.
func TestGateStopsWhereRequestsQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newQueuedBottleneck(256, 5*time.Millisecond, 40*time.Millisecond, func() int64 { return 6 })
		defer b.stop()
		half := max(kneeFloor, startWindow/2)
		time.Sleep(150 * time.Millisecond)
		if w := b.g.bound(); w != half {
			t.Fatalf("window %d 150 ms in, want it down at %d already", w, half)
		}
		time.Sleep(time.Second)
		w, stop, knee := b.g.window()
		_, peak := b.g.load()
		if w != half || stop != WindowKnee || knee != w || peak > startWindow {
			t.Fatalf("window %d, stop %q, knee %d, peak %d in flight: want it held at a knee of %d and no step sent above %d",
				w, stop, knee, peak, half, startWindow)
		}
	})
}

// TestGateClimbsWhereTheSpreadIsNoQueue: the times to first byte spread
// as widely (the median 8 times the least) but every request streams at
// its own pace with nothing shared: the half of the start window moves
// half as much, so the climb goes on to the budget.
func TestGateClimbsWhereTheSpreadIsNoQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newQueuedBottleneck(256, 5*time.Millisecond, 40*time.Millisecond, func() int64 { return 1 << 20 })
		defer b.stop()
		time.Sleep(2 * time.Second)
		if w, stop, knee := b.g.window(); w != 256 || stop != WindowBudget || knee != 0 {
			t.Fatalf("window %d, stop %q, knee %d: want the budget, no knee", w, stop, knee)
		}
	})
}

// TestGateLeastTimeToFirstByteLeavesOutTheConnection: a request answered
// 30 ms after it was sent, 25 of them spent dialling its connection, was
// answered 5 ms after the server had it: the least time to first byte
// the queue rule and the steps read is 5 ms.
func TestGateLeastTimeToFirstByteLeavesOutTheConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGate(256, true, func() time.Duration { return 0 }, func() int64 { return 0 })
		s, err := g.acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(30 * time.Millisecond)
		s.connect = 25 * time.Millisecond
		g.answered(&s)
		g.release(s, false)
		if got := time.Duration(g.least.Load()); got != 5*time.Millisecond {
			t.Fatalf("least time to first byte %v, want 5ms", got)
		}
	})
}

// TestGateStepsAtOnceOnlyWhereEveryAnswerIsSlow: the median time to
// first byte (24 ms) is longer than a window's measure but the least (8
// ms) is not, and 24 requests streaming move all there is. The steps
// wait for the measure of the window before them, as where answers are
// quick, so the climb stops at 32 having sent one step past it, not
// three (sent at once, the steps reached the budget before the first
// was judged).
func TestGateStepsAtOnceOnlyWhereEveryAnswerIsSlow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newQueuedBottleneck(256, 8*time.Millisecond, 24*time.Millisecond, func() int64 { return 24 })
		time.Sleep(time.Second)
		w, stop, knee := b.g.window()
		b.stop()
		_, peak := b.g.load()
		if stop != WindowKnee || knee < 24 || knee > 48 || w != knee || peak > 64 {
			t.Fatalf("window %d, stop %q, knee %d, peak %d in flight: want it held at a knee of 24-48, one step sent past it at most", w, stop, knee, peak)
		}
	})
}

// TestGateKneeKeepsTheClimbWhereEachStepPays: with no bottleneck each
// step doubles the throughput; the window reaches the budget as fast as
// the climb with nothing measured (three round trips from 32 to 256).
func TestGateKneeKeepsTheClimbWhereEachStepPays(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		b := newBottleneck(256, 30*time.Millisecond, func() int64 { return 1 << 20 })
		defer b.stop()
		for b.g.bound() < 256 && time.Since(start) < time.Second {
			time.Sleep(time.Millisecond)
		}
		if d, most := time.Since(start), 5*30*time.Millisecond; d > most {
			t.Fatalf("the window took %s to reach the budget (now %d), want at most %s", d, b.g.bound(), most)
		}
		time.Sleep(time.Second) // the budget is measured too: it pays
		if w, stop, knee := b.g.window(); w != 256 || stop != WindowBudget || knee != 0 {
			t.Fatalf("window %d, stop %q, knee %d; want the budget 256, no knee", w, stop, knee)
		}
	})
}

// TestGateGrowsAgainWhenThroughputPerRequestRises: the bottleneck widens
// from 40 to 200 requests a second into the run; the window held at its
// knee sees its throughput per request rise and climbs on, well before
// its next periodic probe.
func TestGateGrowsAgainWhenThroughputPerRequestRises(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var wide atomic.Bool
		b := newBottleneck(256, 5*time.Millisecond, func() int64 {
			if wide.Load() {
				return 200
			}
			return 40
		})
		defer b.stop()
		time.Sleep(time.Second)
		if _, stop, knee := b.g.window(); stop != WindowKnee || knee > 80 {
			t.Fatalf("stop %q, knee %d before the bottleneck widens; want a knee of at most 80", stop, knee)
		}
		wide.Store(true)
		time.Sleep(300 * time.Millisecond) // the next probe is due after 2 s
		if w, stop, _ := b.g.window(); w < 200 {
			t.Fatalf("window %d (%q) once 200 requests stream at full speed, want at least 200", w, stop)
		}
	})
}

// TestGateGrowsAgainWhenRequestsBecomeSmall: a window held at its knee,
// where 40 large requests streaming at once move all the server can,
// sees the requests turn small (a mix's small objects after its large
// ones): each now waits its time to first byte for a few milliseconds of
// streaming, so 40 streaming at once take several times as many in
// flight. Its throughput per request falls, and it climbs on well before
// its next periodic probe.
func TestGateGrowsAgainWhenRequestsBecomeSmall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBottleneck(256, 5*time.Millisecond, func() int64 { return 40 })
		defer b.stop()
		time.Sleep(time.Second)
		w, stop, knee := b.g.window()
		if stop != WindowKnee || knee > 80 {
			t.Fatalf("stop %q, knee %d before the requests turn small; want a knee of at most 80", stop, knee)
		}
		b.small.Store(true)
		time.Sleep(500 * time.Millisecond) // the next probe is due after 2 s
		if w2, stop2, _ := b.g.window(); w2 < 2*w {
			t.Fatalf("window %d (%q) once requests are small, want at least %d (twice the knee)", w2, stop2, 2*w)
		}
	})
}

// TestGateKneeStillCutsOnSlowDown: a window held at its knee is cut by
// a SlowDown like any other, and says so.
func TestGateKneeStillCutsOnSlowDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBottleneck(256, 5*time.Millisecond, func() int64 { return 40 })
		defer b.stop()
		time.Sleep(time.Second)
		w, stop, _ := b.g.window()
		if stop != WindowKnee {
			t.Fatalf("stop %q before the SlowDown, want %q", stop, WindowKnee)
		}
		b.throttle.Store(true)
		time.Sleep(100 * time.Millisecond)
		if w2, stop2, knee2 := b.g.window(); w2 >= w || stop2 != WindowSlowDown || knee2 != 0 {
			t.Fatalf("after a SlowDown: window %d (was %d), stop %q, knee %d; want a cut, %q, no knee", w2, w, stop2, knee2, WindowSlowDown)
		}
	})
}

func TestPays(t *testing.T) {
	for _, c := range []struct {
		prev, cur level
		want      bool
	}{
		{level{w: 32, rate: 100}, level{w: 64, rate: 111}, true},
		{level{w: 32, rate: 100}, level{w: 64, rate: 109}, false},
		{level{w: 128, rate: 100}, level{w: 256, rate: 95}, false},
		{level{w: 200, rate: 100}, level{w: 256, rate: 103}, true}, // a smaller step, in proportion
		{level{w: 32, rate: 0}, level{w: 64, rate: 0}, true},       // nothing moved: nothing said
	} {
		if got := pays(c.prev, c.cur); got != c.want {
			t.Errorf("pays(%+v, %+v) = %v, want %v", c.prev, c.cur, got, c.want)
		}
	}
}

// TestKneeLevelIsItsBestSample: a window held at its knee probes when
// its throughput per request rises kneeRise over the best of its full
// samples, not over the first one alone, which may have been taken
// while its connections were still being made. The rule alone, fed one
// observation per sample.
func TestKneeLevelIsItsBestSample(t *testing.T) {
	r := windowRule{max: 256, start: startWindow}
	const w = 16
	o := observation{TTFB: time.Millisecond, InFlight: w, Full: true}
	settled := turn{r: r, o: o, s: r.initial()}
	settled.settle(level{w: w})
	s := settled.s
	// One sample: w requests in flight over kneeHoldSpan, moving
	// rate x (kneeCounts x sqrt(w) x countEvery per kneeSpan) bytes.
	unit := float64(kneeCounts * 4 * countEvery)
	sample := func(rate float64) (probed bool) {
		o.Now += kneeHoldSpan
		o.Area += w * kneeHoldSpan
		o.Moved += int64(float64(kneeHoldSpan/kneeSpan) * rate * unit)
		s = r.next(s, o)
		return s.Phase == PhaseProbe
	}
	for i, c := range []struct {
		rate  float64
		probe bool
	}{
		{1.0, false}, // the knee's first full sample: its level
		{1.2, false}, // a rise short of kneeRise: the new best
		{1.4, false}, // kneeRise over the first, not over the best
		{1.8, true},  // kneeRise over the best
	} {
		if got := sample(c.rate); got != c.probe {
			t.Fatalf("sample %d at %.1fx: probe %v, want %v (phase %v)", i, c.rate, got, c.probe, s.Phase)
		}
	}
	if s.Window != 2*w {
		t.Fatalf("window %d after the probe, want %d", s.Window, 2*w)
	}
}

// TestKneeProbesWhenThroughputPerRequestFalls: a window held at its knee
// probes when its throughput per request falls to half the knee's (the
// requests changed), and not for a smaller fall.
func TestKneeProbesWhenThroughputPerRequestFalls(t *testing.T) {
	r := windowRule{max: 256, start: startWindow}
	const w = 16
	o := observation{TTFB: time.Millisecond, InFlight: w, Full: true}
	settled := turn{r: r, o: o, s: r.initial()}
	settled.settle(level{w: w})
	s := settled.s
	unit := float64(kneeCounts * 4 * countEvery)
	sample := func(rate float64) (probed bool) {
		o.Now += kneeHoldSpan
		o.Area += w * kneeHoldSpan
		o.Moved += int64(float64(kneeHoldSpan/kneeSpan) * rate * unit)
		s = r.next(s, o)
		return s.Phase == PhaseProbe
	}
	for i, c := range []struct {
		rate  float64
		probe bool
	}{
		{1.0, false}, // the knee's first full sample: its level
		{0.7, false}, // a fall short of a halving
		{0.45, true}, // under half the knee's
	} {
		if got := sample(c.rate); got != c.probe {
			t.Fatalf("sample %d at %.1fx: probe %v, want %v (phase %v)", i, c.rate, got, c.probe, s.Phase)
		}
	}
}

// TestKneeTrimsAQuarterWhileItHolds: a window settled at 64 with a trim
// due tries 48 against its first full sample, keeps it when it moves as
// much less kneeHold, tries 36, and goes back to 48 when 36 moves a
// fifth less. The rule alone, fed one observation per sample.
func TestKneeTrimsAQuarterWhileItHolds(t *testing.T) {
	r := windowRule{max: 256, start: startWindow}
	o := observation{TTFB: time.Millisecond, Full: true}
	settled := turn{r: r, o: o, s: r.initial()}
	settled.settle(level{w: 64})
	s := settled.s
	s.kn.trimDue = true
	// One sample of w requests in flight over kneeHoldSpan, moving rate
	// x (kneeCounts x 8 x countEvery per kneeSpan): enough for 64.
	unit := float64(kneeCounts * 8 * countEvery)
	sample := func(w int, rate float64) {
		o.Now += kneeHoldSpan
		o.InFlight = w
		o.Area += time.Duration(w) * kneeHoldSpan
		o.Moved += int64(float64(kneeHoldSpan/kneeSpan) * rate * unit)
		s = r.next(s, o)
	}
	for i, c := range []struct {
		w     int     // in flight over the sample
		rate  float64 // what it moved, against the knee's 1
		after int     // the window after it
	}{
		{64, 1, 48},    // the knee's first full sample: a quarter below is tried
		{48, 0.97, 36}, // within kneeHold of the knee: kept, and the next tried
		{36, 0.8, 48},  // a fifth less: back to the last kept
		{48, 0.97, 48}, // held there
	} {
		sample(c.w, c.rate)
		if s.Window != c.after {
			t.Fatalf("sample %d (%d in flight at %.2fx): window %d, want %d", i, c.w, c.rate, s.Window, c.after)
		}
	}
	if s.Phase != PhaseHold || s.kn.at != 48 || s.kn.down {
		t.Fatalf("phase %v, knee %d, down %v: want held at a knee of 48", s.Phase, s.kn.at, s.kn.down)
	}
}

// TestGateReportsAKneeOnlyWhereItStopped: a window at the budget (a
// probe's, or a trim's from it) reports the budget and no knee; below
// it, the knee it holds.
func TestGateReportsAKneeOnlyWhereItStopped(t *testing.T) {
	g := newGate(256, true, func() time.Duration { return 0 }, func() int64 { return 0 })
	g.state.Window, g.state.kn.at = 256, 192
	if _, stop, knee := g.window(); stop != WindowBudget || knee != 0 {
		t.Fatalf("at the budget with a knee of 192 held below: stop %q, knee %d; want %q, no knee", stop, knee, WindowBudget)
	}
	g.state.Window = 192
	if _, stop, knee := g.window(); stop != WindowKnee || knee != 192 {
		t.Fatalf("held at 192: stop %q, knee %d; want %q at 192", stop, knee, WindowKnee)
	}
}

// TestCrossed: a step to the budget that paid crossed a knee when it
// bought less than kneeCrossed of its share.
func TestCrossed(t *testing.T) {
	for _, c := range []struct {
		prev, cur level
		want      bool
	}{
		{level{w: 256, rate: 100}, level{w: 512, rate: 190}, false}, // per connection caps: nearly all of it
		{level{w: 256, rate: 100}, level{w: 512, rate: 140}, true},  // 40 % of a doubling
		{level{w: 384, rate: 100}, level{w: 512, rate: 120}, false}, // a third more requests, over half of it
		{level{}, level{w: 512, rate: 100}, false},                  // nothing measured before
	} {
		if got := crossed(c.prev, c.cur); got != c.want {
			t.Errorf("crossed(%+v, %+v) = %v, want %v", c.prev, c.cur, got, c.want)
		}
	}
}

// TestKneeProbesBackOff: each probe that finds the knee again doubles
// the wait for the next, up to kneeProbeEvery << kneeProbeBackoff; one
// that pays starts the count again.
func TestKneeProbesBackOff(t *testing.T) {
	r := windowRule{max: 256, start: startWindow}
	tr := turn{r: r, o: observation{Now: time.Second}, s: r.initial()}
	tr.settle(level{w: 64, rate: 100, inFlight: 64})
	for i, want := range []time.Duration{2, 4, 8, 8} {
		tr.s.Phase, tr.s.kn.prev = PhaseProbe, level{w: 64, rate: 100, inFlight: 64}
		if tr.judge(level{w: 128, rate: 101, inFlight: 128}) {
			t.Fatalf("probe %d: a probe that bought 1 %% paid", i)
		}
		if got := tr.s.kn.nextProbe - tr.o.Now; got != want*kneeProbeEvery {
			t.Fatalf("probe %d: next probe %v later, want %v", i, got, want*kneeProbeEvery)
		}
	}
	tr.s.Phase, tr.s.kn.prev = PhaseProbe, level{w: 64, rate: 100, inFlight: 64}
	if !tr.judgeLast(level{w: 128, rate: 150, inFlight: 128}) || tr.s.kn.fails != 0 {
		t.Fatalf("a probe that paid: fails %d, want the climb on and the count at 0", tr.s.kn.fails)
	}
}
