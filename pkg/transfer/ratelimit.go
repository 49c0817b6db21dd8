package transfer

import (
	"context"
	"sync/atomic"
	"time"
)

// RateLimiter caps throughput in bytes per second without a lock: each
// caller reserves its share of a shared virtual clock (GCRA) and sleeps
// only when it is ahead of the rate by more than the burst.
type RateLimiter struct {
	nsPerByte float64
	burst     int64 // ns
	base      time.Time
	tat       atomic.Int64 // theoretical arrival time, ns since base
}

// NewRateLimiter returns a limiter of bytesPerSec with a 100 ms burst
// after an idle spell. It starts with the burst spent: the first 100 ms
// of a run are not free, so no second, the first included, moves more
// than bytesPerSec.
func NewRateLimiter(bytesPerSec int64) *RateLimiter {
	burst := int64(100 * time.Millisecond)
	l := &RateLimiter{nsPerByte: 1e9 / float64(bytesPerSec), burst: burst, base: time.Now()}
	l.tat.Store(burst)
	return l
}

// WaitN waits until n more bytes fit within the rate.
func (l *RateLimiter) WaitN(ctx context.Context, n int) error {
	cost := int64(float64(n) * l.nsPerByte)
	for {
		now := int64(time.Since(l.base))
		tat := l.tat.Load()
		next := max(tat, now) + cost
		if !l.tat.CompareAndSwap(tat, next) {
			continue
		}
		if wait := next - now - l.burst; wait > 0 {
			return sleep(ctx, time.Duration(wait))
		}
		return nil
	}
}
