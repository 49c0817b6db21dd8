package transfer

import (
	"context"
	"sync"
	"time"
)

// gate bounds the ranges in flight and adapts the bound to the server:
// when it answers SlowDown, the whole transfer slows down (the bound is
// cut by a quarter, at most once per cutInterval) instead of failing
// work; as requests succeed again the bound grows back to its maximum.
// It is taken once per request, never per buffer of data.
type gate struct {
	mu       sync.Mutex
	cond     *sync.Cond
	max      int
	allowed  int
	inFlight int
	lastCut  time.Time
	okRun    int // successes since the last change of the bound
}

const cutInterval = 50 * time.Millisecond

func newGate(max int) *gate {
	g := &gate{max: max, allowed: max}
	g.cond = sync.NewCond(&g.mu)
	return g
}

// acquire waits for room under the bound, or for ctx to end.
func (g *gate) acquire(ctx context.Context) error {
	g.mu.Lock()
	if g.inFlight < g.allowed && ctx.Err() == nil {
		g.inFlight++ // room: no waiting, nothing to register
		g.mu.Unlock()
		return nil
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
			return err
		}
		g.cond.Wait()
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	g.inFlight++
	return nil
}

// release gives the room back; throttled says the server asked to slow
// down, ok that the request succeeded.
func (g *gate) release(throttled, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.inFlight--
	switch {
	case throttled:
		if now := time.Now(); now.Sub(g.lastCut) >= cutInterval {
			g.allowed = max(1, g.allowed*3/4)
			g.lastCut, g.okRun = now, 0
		}
	case ok && g.allowed < g.max:
		if g.okRun++; g.okRun >= g.allowed {
			g.allowed = min(g.max, g.allowed+max(1, g.allowed/8))
			g.okRun = 0
		}
	}
	g.cond.Broadcast()
}

// bound is the current limit on ranges in flight.
func (g *gate) bound() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.allowed
}

// inFlightNow is the number of ranges holding a slot now.
func (g *gate) inFlightNow() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.inFlight
}
