package transfer

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

func ttfb30ms() time.Duration { return 30 * time.Millisecond }

// answerAfter answers the request of s after d, as a server would: the
// slot stays taken (its body streams on).
func answerAfter(g *gate, s slot, d time.Duration) {
	go func() {
		time.Sleep(d)
		g.answered(&s)
	}()
}

func step(w int) int { return stepUp(w) }

// startedGate is newGate with its sampler running until ctx ends.
func startedGate(ctx context.Context, max int, adaptive bool, ttfb func() time.Duration, moved func() int64) *gate {
	g := newGate(max, adaptive, ttfb, moved)
	go g.run(ctx)
	return g
}

// throttledNow gives the slot s back refused with SlowDown, and waits
// for the rule to have seen it (in a synctest bubble).
func throttledNow(g *gate, s slot) {
	g.release(s, true)
	synctest.Wait()
}

// answeredNow records the answer to s, and waits for the rule to have
// seen it (in a synctest bubble).
func answeredNow(g *gate, s *slot) {
	g.answered(s)
	synctest.Wait()
}

// acquireN takes n slots of g, none of which may wait.
func acquireN(ctx context.Context, t *testing.T, g *gate, n int) []slot {
	t.Helper()
	var slots []slot
	for range n {
		s, err := g.acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		slots = append(slots, s)
	}
	return slots
}

func TestGateGrowsToTheBudgetWhileFull(t *testing.T) {
	for _, budget := range []int{48, 100, 256} {
		// In a synctest bubble the clock is the test's: the window grows
		// on the gate's own ticks however loaded the machine is.
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			g := newGate(budget, true, ttfb30ms, nil)
			go g.run(ctx)
			if got, want := g.bound(), min(startWindow, budget); got != want {
				t.Fatalf("budget %d: window at start %d, want %d", budget, got, want)
			}
			for range budget {
				s, err := g.acquire(ctx)
				if err != nil {
					t.Fatal(err)
				}
				answerAfter(g, s, 30*time.Millisecond)
			}
			if got := g.bound(); got != budget {
				t.Fatalf("window %d, want the budget %d", got, budget)
			}
			// From 32, doubling once per 30 ms round trip: three round
			// trips to 256 (a climb by half, then by a quarter, took
			// eight).
			if d, most := time.Since(g.since), 5*30*time.Millisecond; d > most {
				t.Errorf("budget %d: the window took %s to reach it, want at most %s", budget, d, most)
			}
			time.Sleep(time.Second) // the last answers arrive
		})
	}
}

// TestGateStartsWhereAsked: a start window asked for (Options.StartWindow)
// is where an adaptive window starts, within the budget, and the climb
// still reaches the budget from it where every step pays.
func TestGateStartsWhereAsked(t *testing.T) {
	for _, tt := range []struct{ budget, start, want int }{
		{256, 16, 16}, {8, 16, 8}, {256, 0, startWindow},
	} {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			g := newGateAt(tt.budget, tt.start, true, ttfb30ms, nil)
			go g.run(ctx)
			if got := g.bound(); got != tt.want {
				t.Fatalf("budget %d, start %d: window %d, want %d", tt.budget, tt.start, got, tt.want)
			}
			for range tt.budget {
				s, err := g.acquire(ctx)
				if err != nil {
					t.Fatal(err)
				}
				answerAfter(g, s, 30*time.Millisecond)
			}
			if got := g.bound(); got != tt.budget {
				t.Errorf("budget %d, start %d: window %d, want it climbed to the budget", tt.budget, tt.start, got)
			}
			time.Sleep(time.Second)
		})
	}
}

// TestGateStepWaitsForTheLastStepsAnswers: the window grows by a step
// only once the server answered every request of the step before, so a
// step never goes out before the server could say SlowDown to the last.
func TestGateStepWaitsForTheLastStepsAnswers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		g := newGate(256, true, ttfb30ms, nil)
		go g.run(ctx)
		slots := acquireN(ctx, t, g, startWindow)
		waiter := make(chan slot)
		go func() {
			s, err := g.acquire(ctx) // the window is full
			if err != nil {
				t.Error(err)
			}
			waiter <- s
		}()
		for i := range slots[:startWindow-1] {
			g.answered(&slots[i])
		}
		// Several median times to first byte, one request unanswered.
		time.Sleep(150 * time.Millisecond)
		if got := g.bound(); got != startWindow {
			t.Fatalf("window %d with a request of the step unanswered, want %d", got, startWindow)
		}
		g.answered(&slots[startWindow-1])
		synctest.Wait()
		if got := g.bound(); got != step(startWindow) {
			t.Fatalf("window %d once the step was answered, want %d", got, step(startWindow))
		}
		s := <-waiter
		// The new step: the rest fill it, then one waits. A SlowDown to
		// one of them cuts it; a request that never gets its answer
		// holds the next step back only until its answers are late.
		slots = slots[:0]
		slots = append(slots, s)
		for range step(startWindow) - startWindow - 1 {
			s, err := g.acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			slots = append(slots, s)
		}
		go func() {
			s, err := g.acquire(ctx)
			if err != nil {
				t.Error(err)
			}
			waiter <- s
		}()
		synctest.Wait()
		for i := range slots[1:] {
			g.answered(&slots[1+i])
		}
		time.Sleep(lateAnswers / 2)
		if got := g.bound(); got != step(startWindow) {
			t.Fatalf("window %d with one answer missing, want %d", got, step(startWindow))
		}
		time.Sleep(lateAnswers)
		if got := g.bound(); got != step(step(startWindow)) {
			t.Fatalf("window %d once the missing answer was late, want %d", got, step(step(startWindow)))
		}
		<-waiter
	})
}

func TestGateCutsToWhatTheServerServedOnSlowDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		g := startedGate(ctx, 100, true, ttfb30ms, nil)
		slots := acquireN(ctx, t, g, startWindow)
		for i := range slots[:20] {
			g.answered(&slots[i]) // 20 answered at once; the rest wait
		}
		// Request 25 went out with 25 ahead of it: the server refused
		// it holding those.
		throttledNow(g, slots[25])
		if got := g.bound(); got != 25 {
			t.Fatalf("window after a SlowDown %d, want 25: the requests in flight when it was sent", got)
		}
		throttledNow(g, slots[27]) // sent before the cut, with more ahead: nothing new
		if got := g.bound(); got != 25 {
			t.Fatalf("window after a SlowDown to a later request of the same burst %d, want 25", got)
		}
		throttledNow(g, slots[22]) // sent before the cut with fewer ahead: lower
		if got := g.bound(); got != 22 {
			t.Fatalf("window after a SlowDown to an earlier request of the same burst %d, want 22", got)
		}
		// Two more succeed: 22 answered and streaming at once, as many
		// as the window.
		answeredNow(g, &slots[20])
		answeredNow(g, &slots[21])
		if got := g.bound(); got != 22 {
			t.Fatalf("window after the burst's successes %d, want 22", got)
		}
		// 25 in flight over a window of 22: slots freed are not reused
		// until the window allows.
		for _, s := range slots[28:] {
			g.release(s, false)
		}
		short, stop := context.WithTimeout(ctx, 100*time.Millisecond)
		if _, err := g.acquire(short); err == nil {
			t.Fatalf("acquire with %d in flight over a window of 22 succeeded", g.inFlightNow())
		}
		stop()
		for _, i := range []int{23, 24, 26} {
			g.release(slots[i], false)
		}
		if n := g.inFlightNow(); n != 22 {
			t.Fatalf("in flight %d, want 22", n)
		}
		got := make(chan slot)
		go func() {
			s, err := g.acquire(ctx)
			if err != nil {
				t.Error(err)
			}
			got <- s
		}()
		synctest.Wait()
		g.release(slots[0], false)
		s := <-got
		g.answered(&s)
		// Full and unthrottled: within a few round trips the window is
		// back at the level the cut found, and probes up from it by one
		// a second.
		go func() {
			s, err := g.acquire(ctx)
			if err != nil {
				t.Error(err)
			}
			got <- s
		}()
		time.Sleep(recoverAfter*30*time.Millisecond + 50*time.Millisecond)
		if b := g.bound(); b != 25 {
			t.Errorf("window a few round trips after the cut %d, want 25", b)
		}
		<-got
		acquireN(ctx, t, g, 25-g.inFlightNow()) // full again, one waiting
		go func() {
			s, err := g.acquire(ctx)
			if err != nil {
				t.Error(err)
			}
			got <- s
		}()
		time.Sleep(probeEvery + 50*time.Millisecond)
		if b := g.bound(); b != 26 {
			t.Errorf("window a second later %d, want 26", b)
		}
		<-got
	})
}

func TestGateNotAdaptiveStaysAtTheBudget(t *testing.T) {
	g := newGate(100, false, ttfb30ms, nil)
	s, _ := g.acquire(context.Background())
	g.release(s, true)
	if got := g.bound(); got != 100 {
		t.Fatalf("window %d, want 100 whatever the server says", got)
	}
}

func TestGateBlocksAtBoundAndHonoursContext(t *testing.T) {
	g := newGate(1, false, ttfb30ms, nil)
	s, err := g.acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := g.acquire(ctx); err == nil {
		t.Fatal("acquire beyond the bound succeeded")
	}
	g.release(s, false)
	if _, err := g.acquire(context.Background()); err != nil {
		t.Fatalf("acquire after release: %v", err)
	}
}

// TestGateCutsToWhatARateLets: under a limit on requests per second the
// requests in flight when the refused one was sent count every request
// the window let out; the window drops instead to what the server
// answered successfully per time to first byte over the last four of
// them, plus those streaming.
func TestGateCutsToWhatARateLets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		g := startedGate(ctx, 256, true, ttfb30ms, nil)
		slots := acquireN(ctx, t, g, startWindow)
		// Small objects: each is answered and done at once. Ten long
		// ago, then ten over the last four times to first byte.
		for i := range slots[:20] {
			answeredNow(g, &slots[i])
			g.release(slots[i], false)
			switch i {
			case 9:
				time.Sleep(time.Second)
			case 12, 15, 17, 19:
				time.Sleep(30 * time.Millisecond)
			}
		}
		// Two more are answered now and stream on: twelve answers in
		// four times to first byte, three in each. Request 30 went out
		// with 29 ahead of it.
		answeredNow(g, &slots[20])
		answeredNow(g, &slots[21])
		throttledNow(g, slots[30])
		if got, want := g.bound(), 2+3; got != want {
			t.Fatalf("window after a SlowDown %d, want %d: 3 answered per time to first byte and 2 streaming", got, want)
		}
	})
}

func TestGateLaterCutsLowerByAnEighthAtMost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		g := startedGate(ctx, 256, true, ttfb30ms, nil)
		slots := acquireN(ctx, t, g, startWindow)
		// The climb's first cut finds the level from far above: 16 in
		// flight when request 16 was sent, nothing answered.
		throttledNow(g, slots[16])
		if got := g.bound(); got != 16 {
			t.Fatalf("window after the first SlowDown %d, want 16", got)
		}
		for _, s := range slots[17:] {
			g.release(s, false)
		}
		// Two requests sent under the cut window are refused, with 8 and
		// 9 in flight ahead of them: a later cut lowers the window by an
		// eighth at most, and the other SlowDown of its burst may not
		// take it below that either.
		for _, s := range slots[8:16] {
			g.release(s, false)
		}
		burst := acquireN(ctx, t, g, 2)
		throttledNow(g, burst[0])
		if got := g.bound(); got != 14 {
			t.Fatalf("window after a later SlowDown %d, want 14: 16 less an eighth", got)
		}
		throttledNow(g, burst[1])
		if got := g.bound(); got != 14 {
			t.Fatalf("window after a SlowDown of the same burst %d, want 14", got)
		}
	})
}

func TestGateWindowNeverDropsBelowOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		g := startedGate(ctx, 256, true, ttfb30ms, nil)
		slots := acquireN(ctx, t, g, startWindow)
		throttledNow(g, slots[0]) // refused with nothing ahead of it
		for _, s := range slots[1:] {
			throttledNow(g, s) // the rest of the burst
		}
		for range 3 { // later cuts, each from a window of one
			if got := g.bound(); got != 1 {
				t.Fatalf("window %d after a storm, want 1", got)
			}
			s, err := g.acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			throttledNow(g, s)
		}
		if got := g.bound(); got != 1 {
			t.Fatalf("window %d after later cuts, want 1", got)
		}
	})
}

// BenchmarkGateAtTheBudget is the gate's cost per request under
// contention: every goroutine takes a slot, is answered and gives it
// back, the window at the budget with room to spare, as in a run whose
// window climbed there. Run it at several GOMAXPROCS
// (go test -run '^$' -bench BenchmarkGateAtTheBudget -cpu 2,16,64): the
// target is at most 1 µs per request.
func BenchmarkGateAtTheBudget(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const budget = 1024
	var moved atomic.Int64
	g := newGate(budget, true, ttfb30ms, moved.Load)
	go g.run(ctx)
	g.allowed.Store(budget) // at the budget: the climb is not measured here
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			s, err := g.acquire(ctx)
			if err != nil {
				b.Error(err)
				return
			}
			g.answered(&s)
			g.release(s, false)
		}
	})
}

// TestGateWakesAWaiterWhenACutLeavesRoom: a request waiting for room
// while every slot is refused SlowDown under the current window is woken
// once the cut window has room, though no release woke it (a slot freed
// by a SlowDown wakes no one until the window allows) and the window did
// not grow: the server answered everything, so no later release would.
func TestGateWakesAWaiterWhenACutLeavesRoom(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		g := newGateAt(8, 4, true, ttfb30ms, nil)
		slots := acquireN(ctx, t, g, 4)
		got := make(chan error, 1)
		go func() {
			_, err := g.acquire(ctx) // the window is full
			got <- err
		}()
		synctest.Wait()
		for _, s := range slots {
			g.release(s, true) // all refused before the sampler's next tick
		}
		go g.run(ctx)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		select {
		case err := <-got:
			if err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("the waiter still waits with window %d and %d in flight", g.bound(), g.inFlightNow())
		}
	})
}
