package transfer

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestRateLimiterFirstSecond: callers reading as fast as they can get no
// more than the rate in any second, the first one included (a burst
// granted at the start showed as a first second over --max-bandwidth).
func TestRateLimiterFirstSecond(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const rate, chunk = 1 << 20, 64 << 10
		l := NewRateLimiter(rate)
		ctx, cancel := context.WithCancel(context.Background())
		var granted atomic.Int64
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for l.WaitN(ctx, chunk) == nil {
					granted.Add(chunk)
				}
			})
		}
		for s := 1; s <= 3; s++ {
			time.Sleep(time.Second)
			synctest.Wait()
			// By s seconds at most s seconds of the rate, plus the
			// chunks the callers reserved before sleeping for them.
			if got, most := granted.Load(), int64(s*rate); got > most {
				t.Errorf("after %ds: %d bytes granted, want at most %d", s, got, most)
			}
		}
		cancel()
		wg.Wait()
	})
}
