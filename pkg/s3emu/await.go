package s3emu

import (
	"context"
	"sync"
	"sync/atomic"
)

// changes wakes those who await the server's state: it is signalled
// where the counts, the log or the stored objects may have changed (a
// request's arrival, its response's header and each write of its body,
// its end, a connection's state), and costs one atomic load while no
// one awaits.
type changes struct {
	waiters atomic.Int32
	mu      sync.Mutex
	ch      chan struct{} // closed at the next change; nil until awaited
}

// next is the channel the next change closes.
func (c *changes) next() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ch == nil {
		c.ch = make(chan struct{})
	}
	return c.ch
}

// signal wakes every awaiter.
func (c *changes) signal() {
	if c.waiters.Load() == 0 {
		return
	}
	c.mu.Lock()
	if c.ch != nil {
		close(c.ch)
		c.ch = nil
	}
	c.mu.Unlock()
}

// Await waits until done holds of the server's Stats, checking them
// again at each change, and returns them; or returns the last it saw
// with ctx's error once ctx ends. done may read anything else of the
// server as well (Log, BytesSentFor, the objects stored): it is called
// again after every request ends. done must not send requests to the
// server itself (each would wake it again).
func (s *Server) Await(ctx context.Context, done func(Stats) bool) (Stats, error) {
	c := &s.c.changes
	c.waiters.Add(1)
	defer c.waiters.Add(-1)
	for {
		next := c.next() // before reading: a change after this closes it
		st := s.Stats()
		if done(st) {
			return st, nil
		}
		select {
		case <-next:
		case <-ctx.Done():
			return st, ctx.Err()
		}
	}
}
