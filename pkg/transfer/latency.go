package transfer

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// latencyBuckets is a lock-free histogram of durations with buckets that
// grow by 1/8 of a power of two, from 1µs to about 70 minutes.
type latencyBuckets struct {
	counts [8 * 32]atomic.Int64
}

func bucketOf(d time.Duration) int {
	us := d.Microseconds()
	if us < 1 {
		us = 1
	}
	exp := 63 - bits.LeadingZeros64(uint64(us))
	var frac int64
	if exp >= 3 {
		frac = (us >> (exp - 3)) & 7
	} else {
		frac = (us << (3 - exp)) & 7
	}
	i := exp*8 + int(frac)
	if i >= len(latencyBuckets{}.counts) {
		i = len(latencyBuckets{}.counts) - 1
	}
	return i
}

// bucketValue is the upper edge of bucket i.
func bucketValue(i int) time.Duration {
	exp := i / 8
	frac := int64(i % 8)
	us := (int64(8) + frac + 1) << exp >> 3
	return time.Duration(us) * time.Microsecond
}

func (h *latencyBuckets) add(d time.Duration) { h.counts[bucketOf(d)].Add(1) }

// quantile returns the q-quantile (0 < q <= 1), within one bucket's width.
func (h *latencyBuckets) quantile(q float64) time.Duration {
	var total int64
	for i := range h.counts {
		total += h.counts[i].Load()
	}
	if total == 0 {
		return 0
	}
	rank := int64(q*float64(total) + 0.5)
	if rank < 1 {
		rank = 1
	}
	var seen int64
	for i := range h.counts {
		seen += h.counts[i].Load()
		if seen >= rank {
			return bucketValue(i)
		}
	}
	return bucketValue(len(h.counts) - 1)
}
