package transfer

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// stallWatch abandons ranges that deliver nothing for a timeout: each
// range in flight keeps a progress count that the copy loop bumps as data
// arrives (an atomic add, no clock read), and one goroutine, ticking a
// quarter of the timeout, cancels those whose count stood still too long.
type stallWatch struct {
	timeout time.Duration
	base    time.Time
	mu      sync.Mutex
	live    map[*rangeClock]struct{}
}

type rangeClock struct {
	progress atomic.Int64 // bumped by touch
	cancel   context.CancelCauseFunc
	// Kept by the watch, under its mutex: the progress it last saw and
	// when (nanoseconds since the watch's base) that value was new.
	seen    int64
	changed int64
}

// touch records that data arrived.
func (c *rangeClock) touch() { c.progress.Add(1) }

func (w *stallWatch) init(timeout time.Duration) {
	w.timeout, w.base = timeout, time.Now()
	w.live = make(map[*rangeClock]struct{})
}

// track starts watching one range and returns the context it runs under.
func (w *stallWatch) track(ctx context.Context) (context.Context, *rangeClock) {
	rctx, cancel := context.WithCancelCause(ctx)
	c := &rangeClock{cancel: cancel, changed: int64(time.Since(w.base))}
	w.mu.Lock()
	w.live[c] = struct{}{}
	w.mu.Unlock()
	return rctx, c
}

func (w *stallWatch) done(c *rangeClock) {
	w.mu.Lock()
	delete(w.live, c)
	w.mu.Unlock()
	c.cancel(nil)
}

func (w *stallWatch) run(ctx context.Context) {
	tick := max(w.timeout/4, 10*time.Millisecond)
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := int64(time.Since(w.base))
		w.mu.Lock()
		for c := range w.live {
			if p := c.progress.Load(); p != c.seen {
				c.seen, c.changed = p, now
			} else if now-c.changed > int64(w.timeout) {
				c.cancel(errStalled)
			}
		}
		w.mu.Unlock()
	}
}

// stallCause turns the error of a range cancelled by the watch into
// errStalled, which is retried.
func stallCause(ctx context.Context, err error) error {
	if err != nil && errors.Is(context.Cause(ctx), errStalled) {
		return errStalled
	}
	return err
}
