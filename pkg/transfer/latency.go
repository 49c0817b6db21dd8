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

// LatencyRecorder is a lock-free histogram of durations, the engine's
// own, for an adapter that times what the engine does not split (the
// time to first byte of one class of objects). Its zero value is ready.
type LatencyRecorder struct{ b latencyBuckets }

// Add records one duration.
func (r *LatencyRecorder) Add(d time.Duration) { r.b.add(d) }

// Snapshot is the histogram so far.
func (r *LatencyRecorder) Snapshot() Histogram { return r.b.snapshot() }

// quantile returns the q-quantile (0 < q <= 1), within one bucket's width.
func (h *latencyBuckets) quantile(q float64) time.Duration { return h.snapshot().Quantile(q) }

// Histogram is a snapshot of a latency histogram: the count of each
// bucket, from the smallest duration up. Its memory is fixed (one count
// per bucket) however long the run.
type Histogram struct {
	// Counts[i] is the number of durations at most Upper(i) and above
	// Upper(i-1).
	Counts []int64
}

// Upper is the upper edge of bucket i.
func (Histogram) Upper(i int) time.Duration { return bucketValue(i) }

// Total is the number of durations recorded.
func (h Histogram) Total() int64 {
	var n int64
	for _, c := range h.Counts {
		n += c
	}
	return n
}

// Quantile returns the q-quantile (0 < q <= 1) within one bucket's width
// (1/8 of a power of two), or 0 when the histogram is empty.
func (h Histogram) Quantile(q float64) time.Duration {
	total := h.Total()
	if total == 0 {
		return 0
	}
	rank := max(int64(q*float64(total)+0.5), 1)
	var seen int64
	for i, c := range h.Counts {
		if seen += c; seen >= rank {
			return bucketValue(i)
		}
	}
	return bucketValue(len(h.Counts) - 1)
}

// snapshot copies the histogram's counts.
func (h *latencyBuckets) snapshot() Histogram {
	counts := make([]int64, len(h.counts))
	for i := range h.counts {
		counts[i] = h.counts[i].Load()
	}
	return Histogram{Counts: counts}
}
