package transfer

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// stallWatch abandons ranges that deliver nothing for a timeout: each
// range in flight keeps a clock that the copy loop touches as data
// arrives, and one goroutine cancels those whose clock stopped.
type stallWatch struct {
	timeout time.Duration
	base    time.Time
	mu      sync.Mutex
	live    map[*rangeClock]struct{}
}

type rangeClock struct {
	w      *stallWatch
	last   atomic.Int64 // nanoseconds since w.base
	cancel context.CancelCauseFunc
}

func (c *rangeClock) touch() { c.last.Store(int64(time.Since(c.w.base))) }

func (w *stallWatch) init(timeout time.Duration) {
	w.timeout, w.base = timeout, time.Now()
	w.live = make(map[*rangeClock]struct{})
}

// track starts watching one range and returns the context it runs under.
func (w *stallWatch) track(ctx context.Context) (context.Context, *rangeClock) {
	rctx, cancel := context.WithCancelCause(ctx)
	c := &rangeClock{w: w, cancel: cancel}
	c.touch()
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
			if now-c.last.Load() > int64(w.timeout) {
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
