package transfer

import (
	"context"
	"testing"
	"time"
)

// TestEndOfRunTakesStragglersOverSooner: a range silent for 150 ms while
// others progress is left alone during a run (the bound is 250 ms) and
// taken over at the end of one, when slots are idle (100 ms).
func TestEndOfRunTakesStragglersOverSooner(t *testing.T) {
	for _, end := range []bool{false, true} {
		var w stallWatch
		w.init(30*time.Second, func() (bool, bool) { return true, end }, func() time.Duration { return 0 })
		ctx, c := w.track(context.Background(), true)
		c.seen, c.changed = 1, 0                   // it had bytes, then nothing
		w.lastMove = int64(100 * time.Millisecond) // while others had more
		w.mu.Lock()
		w.takeOver([]*rangeClock{c}, int64(150*time.Millisecond))
		w.mu.Unlock()
		if got := context.Cause(ctx) == errTakenOver; got != end {
			t.Errorf("end of run %v: taken over after 150 ms of silence %v, want %v", end, got, end)
		}
		w.done(c)
	}
}

// TestLastRangeLeftByItsPeersIsSingledOut: at the end of a run, a range
// that fell silent while the last of its peers delivered bytes and
// finished is a straggler after 100 ms; one that fell silent when
// nothing else moved any more waits the lonely bound (1 s), since the
// machine, not the range, may be what stopped.
func TestLastRangeLeftByItsPeersIsSingledOut(t *testing.T) {
	for _, peerFinished := range []bool{true, false} {
		var w stallWatch
		w.init(30*time.Second, func() (bool, bool) { return true, true }, func() time.Duration { return 0 })
		ctx, c := w.track(context.Background(), true)
		c.seen, c.changed = 1, 0 // it had bytes, then nothing
		if peerFinished {
			time.Sleep(time.Millisecond)
			_, peer := w.track(context.Background(), true)
			peer.touch() // its last bytes, then its end
			w.done(peer)
		}
		w.mu.Lock()
		w.takeOver([]*rangeClock{c}, int64(150*time.Millisecond))
		w.mu.Unlock()
		if got := context.Cause(ctx) == errTakenOver; got != peerFinished {
			t.Errorf("a peer delivered and finished after it fell silent: %v; taken over after 150 ms %v, want %v", peerFinished, got, peerFinished)
		}
		w.done(c)
	}
}
