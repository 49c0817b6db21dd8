package transfer

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

func ttfb30ms() time.Duration { return 30 * time.Millisecond }

func TestGateGrowsToTheBudgetWhileFull(t *testing.T) {
	// In a synctest bubble the clock is the test's: the window grows on
	// the gate's own ticks however loaded the machine is.
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		g := newGate(256, true, ttfb30ms)
		go g.run(ctx)
		if got := g.bound(); got != startWindow {
			t.Fatalf("window at start %d, want %d", got, startWindow)
		}
		taken := 0
		for range 256 {
			if _, err := g.acquire(ctx); err != nil {
				t.Fatal(err)
			}
			taken++
		}
		if got := g.bound(); got != 256 {
			t.Fatalf("window %d after taking %d, want the budget 256", got, taken)
		}
		// From 32 by half per 30 ms round trip: under a second of the
		// bubble's time.
		if d := time.Since(g.since); d > time.Second {
			t.Errorf("the window took %s to reach the budget, want under 1s", d)
		}
	})
}

func TestGateCutsToWhatSucceededOnSlowDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		g := newGate(100, true, ttfb30ms)
		var slots []slot
		for range startWindow {
			s, err := g.acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			slots = append(slots, s)
		}
		for i := range slots[:20] {
			g.answered(&slots[i]) // 20 answered at once; the rest are throttled
		}
		g.release(slots[25], true)
		if got := g.bound(); got != 20 {
			t.Fatalf("window after a SlowDown %d, want 20: the requests that succeeded at once", got)
		}
		g.release(slots[26], true) // sent before the cut: says nothing new
		if got := g.bound(); got != 20 {
			t.Fatalf("window after a second SlowDown of the same epoch %d, want 20", got)
		}
		g.answered(&slots[20]) // sent before the cut, answered after it
		if got := g.bound(); got != 21 {
			t.Fatalf("window after one more success of the cut's epoch %d, want 21", got)
		}
		// 25 in flight over a window of 21: slots freed are not reused
		// until the window allows.
		for _, s := range slots[27:] {
			g.release(s, false)
		}
		short, stop := context.WithTimeout(ctx, 100*time.Millisecond)
		if _, err := g.acquire(short); err == nil {
			t.Fatalf("acquire with %d in flight over a window of 21 succeeded", g.inFlightNow())
		}
		stop()
		for _, s := range slots[21:25] {
			g.release(s, false)
		}
		if n := g.inFlightNow(); n != 21 {
			t.Fatalf("in flight %d, want 21", n)
		}
		got := make(chan error)
		go func() { _, err := g.acquire(ctx); got <- err }()
		synctest.Wait()
		g.release(slots[0], false)
		if err := <-got; err != nil {
			t.Fatal(err)
		}
		// Full and unthrottled: the window probes up by one a second.
		go g.run(ctx)
		go func() { _, err := g.acquire(ctx); got <- err }()
		time.Sleep(probeEvery + 50*time.Millisecond)
		if b := g.bound(); b != 22 {
			t.Errorf("window a second after the cut %d, want 22", b)
		}
		if err := <-got; err != nil {
			t.Fatal(err)
		}
	})
}

func TestGateNotAdaptiveStaysAtTheBudget(t *testing.T) {
	g := newGate(100, false, ttfb30ms)
	s, _ := g.acquire(context.Background())
	g.release(s, true)
	if got := g.bound(); got != 100 {
		t.Fatalf("window %d, want 100 whatever the server says", got)
	}
}

func TestGateBlocksAtBoundAndHonoursContext(t *testing.T) {
	g := newGate(1, false, ttfb30ms)
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
