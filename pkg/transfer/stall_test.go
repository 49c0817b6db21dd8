package transfer

import (
	"context"
	"testing"
	"time"
)

// silentRange returns a watch, at the end of a run or not, and a range
// it tracks that had bytes at its start (time 0) and nothing since.
func silentRange(end bool) (*stallWatch, context.Context, *rangeClock) {
	w := new(stallWatch)
	w.init(30*time.Second, func() (bool, bool) { return true, end }, func() time.Duration { return 0 })
	ctx, c := w.track(context.Background(), true)
	c.seen, c.changed = 1, 0
	return w, ctx, c
}

// takenOverAt runs the watch's takeover at now and reports whether it
// took over the range of ctx.
func takenOverAt(w *stallWatch, ctx context.Context, c *rangeClock, now time.Duration) bool {
	w.mu.Lock()
	w.takeOver([]*rangeClock{c}, int64(now))
	w.mu.Unlock()
	defer w.done(c)
	return context.Cause(ctx) == errTakenOver
}

// TestEndOfRunTakesStragglersOverSooner: a range silent for 150 ms while
// others progress is left alone during a run (the bound is 250 ms) and
// taken over at the end of one, when slots are idle (100 ms).
func TestEndOfRunTakesStragglersOverSooner(t *testing.T) {
	for _, end := range []bool{false, true} {
		w, ctx, c := silentRange(end)
		w.lastMove = int64(100 * time.Millisecond) // while others had more
		if got := takenOverAt(w, ctx, c, 150*time.Millisecond); got != end {
			t.Errorf("end of run %v: taken over after 150 ms of silence %v, want %v", end, got, end)
		}
	}
}

// TestLastRangeLeftByItsPeersIsSingledOut: at the end of a run, a range
// that fell silent while the last of its peers delivered bytes and
// finished is a straggler after 100 ms; one that fell silent when
// nothing else moved any more waits the lonely bound (1 s), since the
// machine, not the range, may be what stopped.
func TestLastRangeLeftByItsPeersIsSingledOut(t *testing.T) {
	for _, peerFinished := range []bool{true, false} {
		w, ctx, c := silentRange(true)
		if peerFinished {
			time.Sleep(time.Millisecond)
			_, peer := w.track(context.Background(), true)
			peer.touch() // its last bytes, then its end
			w.done(peer)
		}
		if got := takenOverAt(w, ctx, c, 150*time.Millisecond); got != peerFinished {
			t.Errorf("a peer delivered and finished after it fell silent: %v; taken over after 150 ms %v, want %v", peerFinished, got, peerFinished)
		}
	}
}
