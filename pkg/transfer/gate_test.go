package transfer

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

func TestGateSlowsDownOnThrottleAndRecovers(t *testing.T) {
	// In a synctest bubble the clock is the test's: sleeping cutInterval
	// moves it exactly that far, whatever the machine's load.
	synctest.Test(t, func(t *testing.T) {
		g := newGate(100)
		ctx := context.Background()
		g.acquire(ctx)
		g.release(true, false)
		if got := g.bound(); got != 75 {
			t.Fatalf("bound after a SlowDown = %d, want 75", got)
		}
		g.acquire(ctx)
		g.release(true, false) // within cutInterval: no second cut
		if got := g.bound(); got != 75 {
			t.Fatalf("bound after a second SlowDown at once = %d, want 75", got)
		}
		time.Sleep(cutInterval)
		g.acquire(ctx)
		g.release(true, false)
		if got := g.bound(); got != 56 {
			t.Fatalf("bound after a later SlowDown = %d, want 56", got)
		}
		for range 2000 {
			g.acquire(ctx)
			g.release(false, true)
		}
		if got := g.bound(); got != 100 {
			t.Fatalf("bound after many successes = %d, want back at 100", got)
		}
	})
}

func TestGateBlocksAtBoundAndHonoursContext(t *testing.T) {
	g := newGate(1)
	if err := g.acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := g.acquire(ctx); err == nil {
		t.Fatal("acquire beyond the bound succeeded")
	}
	g.release(false, true)
	if err := g.acquire(context.Background()); err != nil {
		t.Fatalf("acquire after release: %v", err)
	}
}
