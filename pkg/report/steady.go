package report

import (
	"slices"
	"time"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// The steady state of a run, as warp's autoterm and fio's ramp_time read
// it: the intervals after the warm-up, whose median (with its p10 and
// p90) is the headline figure, and the rule that ends a run early once
// that figure stopped moving.
const (
	// SettleSpan is how long the window must stay put, at least, for the
	// climb to count as over (and at least settleIntervals intervals).
	SettleSpan      = time.Second
	settleIntervals = 2
	// MinSteady is the fewest steady intervals a steady figure is given
	// from: fewer are a ramp and a tail, not a state.
	MinSteady = 3
	// SteadyRun is K of the early end: the run is steady once the median
	// of its last K steady intervals is within SteadyTolerance of the
	// median of the K before them.
	SteadyRun       = 3
	SteadyTolerance = 0.10
)

// Steady is the steady part of a run's series.
type Steady struct {
	// Warmup is the time left out at the start: until the window of
	// requests in flight settled (auto) or as asked.
	Warmup time.Duration
	// Settled says the warm-up ended within the run (auto: the window
	// stopped climbing; asked: the run lasted longer than it).
	Settled bool
	// Intervals is the number of full intervals after the warm-up.
	Intervals int
	// Median, P10 and P90 are over those intervals, in bytes per second;
	// zero when there are fewer than MinSteady (OK is false then).
	Median, P10, P90 float64
	OK               bool
}

// SteadyOf finds the steady part of samples: after warmup, or, when
// warmup is negative, after the window settled (WarmupOf). A run's last
// interval, shorter than the others, is left out when there are others.
func SteadyOf(samples []transfer.Sample, warmup time.Duration) Steady {
	var st Steady
	if warmup < 0 {
		st.Warmup, st.Settled = WarmupOf(samples)
	} else {
		st.Warmup = warmup
		st.Settled = len(samples) > 0 && samples[len(samples)-1].At > warmup
	}
	full := samples
	if len(samples) > 1 {
		full = samples[:len(samples)-1]
	}
	rates := SteadyRates(full, st.Warmup)
	st.Intervals = len(rates)
	if !st.Settled || len(rates) < MinSteady {
		return st
	}
	slices.Sort(rates)
	st.Median, st.P10, st.P90 = quantile(rates, 0.5), quantile(rates, 0.1), quantile(rates, 0.9)
	st.OK = true
	return st
}

// SteadyRates are the rates, in bytes per second and in order, of the
// intervals of samples that began at or after warmup.
func SteadyRates(samples []transfer.Sample, warmup time.Duration) []float64 {
	var rates []float64
	for _, s := range samples {
		if s.At-s.Length >= warmup && s.Length > 0 {
			rates = append(rates, float64(s.Bytes)/s.Length.Seconds())
		}
	}
	return rates
}

// WarmupOf is when the window of requests in flight stopped climbing:
// the end of the first interval after which the window stays where it
// is for at least SettleSpan and settleIntervals intervals. At least the
// first interval (connections opening) is warm-up. settled is false
// when the window never held that long: the run was all ramp.
func WarmupOf(samples []transfer.Sample) (warmup time.Duration, settled bool) {
	for k := 0; k < len(samples); k++ {
		w, from := samples[k].Window, samples[k].At
		held := 0
		for j := k + 1; j < len(samples) && samples[j].Window == w; j++ {
			held++
			if held >= settleIntervals && samples[j].At-from >= SettleSpan {
				return from, true
			}
		}
	}
	if len(samples) == 0 {
		return 0, false
	}
	return samples[len(samples)-1].At, false
}

// Steadied says whether a run whose steady rates so far are rates (in
// order, SteadyRates) may end: the median of the last SteadyRun of them
// is within SteadyTolerance of the median of the SteadyRun before.
func Steadied(rates []float64) bool {
	n := len(rates)
	if n < 2*SteadyRun {
		return false
	}
	last := median(rates[n-SteadyRun:])
	before := median(rates[n-2*SteadyRun : n-SteadyRun])
	if before <= 0 {
		return false
	}
	d := (last - before) / before
	return d <= SteadyTolerance && d >= -SteadyTolerance
}

// median of xs (not sorted in place).
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return quantile(s, 0.5)
}

// quantile is the q-quantile of sorted xs, interpolated between the two
// nearest ranks.
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	pos := q * float64(len(sorted)-1)
	i := int(pos)
	if i >= len(sorted)-1 {
		return sorted[len(sorted)-1]
	}
	return sorted[i] + (pos-float64(i))*(sorted[i+1]-sorted[i])
}
