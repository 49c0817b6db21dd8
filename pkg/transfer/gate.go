package transfer

import (
	"context"
	"sync"
	"time"
)

// gate bounds the requests in flight by a window that follows the
// server (closed-loop concurrency). The window starts at min(32, the
// budget) and grows by half every median time to first byte while it is
// full, up to the budget; with no SlowDown it reaches a budget of 256 in
// a few round trips. When the server answers SlowDown to a request sent
// under the current window, the window drops to the number of requests
// that succeeded concurrently: those answered successfully and still in
// flight, plus those sent before the cut that are answered successfully
// after it. A slot freed by a SlowDown is not reused until the window
// allows, and from then on the window grows by one a second while it
// stays full and unthrottled. A SlowDown to a request sent before the
// last cut says nothing new and is ignored. Not adaptive, the window is
// the budget. The gate is taken once per request, never per buffer of
// data.
type gate struct {
	mu       sync.Mutex
	cond     *sync.Cond
	max      int  // the budget
	adaptive bool // false: the window stays at max
	allowed  int  // the window
	inFlight int

	// epoch counts the window's cuts: a request carries the epoch it was
	// sent in, so that only a SlowDown to a request sent under the
	// current window cuts it again.
	epoch int64
	// streaming counts the requests in flight answered successfully.
	streaming int
	// ceiling is the window before the last cut: requests sent before
	// it and answered successfully after it raise the window up to it.
	ceiling int
	// full: a request waited for the window since it last grew.
	full      bool
	probing   bool                 // after a cut: grow by one a second, not by half
	nextGrow  time.Time            // when a full window may grow next
	growEvery func() time.Duration // the median time to first byte (0: none yet)

	// The in-flight time integral and peak, for Summary.
	since   time.Time
	area    time.Duration // sum of inFlight x time
	peak    int
	lastAdd time.Time
}

// slot is a request's place under the window: the epoch it was taken
// in, and whether the server answered it successfully.
type slot struct {
	epoch    int64
	answered bool
}

// startWindow is where an adaptive window starts.
const startWindow = 32

// probeEvery is how often the window grows by one after a cut.
const probeEvery = time.Second

func newGate(max int, adaptive bool, growEvery func() time.Duration) *gate {
	now := time.Now()
	g := &gate{max: max, adaptive: adaptive, allowed: max, growEvery: growEvery, since: now, lastAdd: now}
	g.nextGrow = now
	if adaptive {
		g.allowed = min(startWindow, max)
	}
	g.cond = sync.NewCond(&g.mu)
	return g
}

// acquire waits for room under the window, or for ctx to end.
func (g *gate) acquire(ctx context.Context) (slot, error) {
	g.mu.Lock()
	if g.inFlight < g.allowed && ctx.Err() == nil {
		s := g.take() // room: no waiting, nothing to register
		g.mu.Unlock()
		return s, nil
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
			return slot{}, err
		}
		g.full = true
		g.grow(time.Now())
		if g.inFlight < g.allowed {
			break
		}
		g.cond.Wait()
	}
	if err := ctx.Err(); err != nil {
		return slot{}, err
	}
	return g.take(), nil
}

// take counts one more request in flight; under the lock.
func (g *gate) take() slot {
	g.account(time.Now())
	g.inFlight++
	g.peak = max(g.peak, g.inFlight)
	return slot{epoch: g.epoch}
}

// account adds the time since the last change to the in-flight integral.
func (g *gate) account(now time.Time) {
	g.area += time.Duration(g.inFlight) * now.Sub(g.lastAdd)
	g.lastAdd = now
}

// answered records that the request of s got a successful response.
func (g *gate) answered(s *slot) {
	s.answered = true
	g.mu.Lock()
	g.streaming++
	if g.adaptive && s.epoch == g.epoch-1 && g.allowed < g.ceiling {
		g.allowed++ // it succeeded alongside those the cut counted
		g.cond.Signal()
	}
	g.mu.Unlock()
}

// release gives the room of s back; throttled says the server asked to
// slow down.
func (g *gate) release(s slot, throttled bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := time.Now()
	g.account(now)
	g.inFlight--
	if s.answered {
		g.streaming--
	}
	if throttled && g.adaptive && s.epoch == g.epoch {
		g.ceiling = g.allowed
		g.allowed = max(1, min(g.allowed, g.streaming))
		g.epoch++
		g.full, g.probing, g.nextGrow = false, true, now.Add(probeEvery)
	} else {
		g.grow(now)
	}
	if g.inFlight < g.allowed {
		g.cond.Signal() // a slot freed by a SlowDown only when the window allows
	}
}

// growInterval is how long a full window waits before growing by half:
// the median time to first byte, so that the requests of one step are
// answered before the next; 0 before any response, when it does not grow.
func (g *gate) growInterval() time.Duration {
	return g.growEvery()
}

// run grows a full window on time while every request in flight is long
// (no release comes to do it), until ctx ends.
func (g *gate) run(ctx context.Context) {
	if !g.adaptive {
		return
	}
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			g.mu.Lock()
			g.grow(now)
			g.mu.Unlock()
		}
	}
}

// grow widens a full window: by half every median time to first byte at
// first, by one a second after a SlowDown. Under the lock.
func (g *gate) grow(now time.Time) {
	if !g.adaptive || !g.full || g.allowed >= g.max {
		return
	}
	if now.Before(g.nextGrow) {
		return
	}
	if !g.probing && g.nextGrow.Equal(g.since) {
		// No response yet when the gate was made: the first step waits
		// for a median time to first byte after the first answers.
		d := g.growInterval()
		if d <= 0 {
			return
		}
		g.nextGrow = now.Add(d)
		return
	}
	old := g.allowed
	if g.probing {
		g.allowed++
		g.nextGrow = now.Add(probeEvery)
	} else {
		g.allowed = min(g.max, max(g.allowed+1, g.allowed*3/2))
		g.nextGrow = now.Add(g.growInterval())
	}
	g.full = false
	for range g.allowed - old {
		g.cond.Signal()
	}
}

// bound is the current window.
func (g *gate) bound() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.allowed
}

// inFlightNow is the number of requests holding a slot now.
func (g *gate) inFlightNow() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.inFlight
}

// load returns the mean and the peak of the requests in flight since the
// gate was made.
func (g *gate) load() (mean float64, peak int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := time.Now()
	g.account(now)
	if d := now.Sub(g.since); d > 0 {
		mean = float64(g.area) / float64(d)
	}
	return mean, g.peak
}
