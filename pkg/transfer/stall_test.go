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
		c.seen, c.changed = 1, 0 // it had bytes, then nothing
		w.mu.Lock()
		w.takeOver([]*rangeClock{c}, int64(150*time.Millisecond), true)
		w.mu.Unlock()
		if got := context.Cause(ctx) == errTakenOver; got != end {
			t.Errorf("end of run %v: taken over after 150 ms of silence %v, want %v", end, got, end)
		}
		w.done(c)
	}
}
