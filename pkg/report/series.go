package report

import (
	"slices"
	"time"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// maxSamples bounds a Series: past it, neighbouring samples are merged
// in pairs, so a run of days keeps a fixed amount of memory and its
// chart's resolution halves instead.
const maxSamples = 4096

// Series collects a run's samples in bounded memory. It is not safe for
// concurrent use; the engine calls OnSample from one goroutine.
type Series struct {
	samples []transfer.Sample
}

// Add appends one sample, merging neighbours when the series is full.
func (s *Series) Add(x transfer.Sample) {
	if len(s.samples) >= maxSamples {
		s.halve()
	}
	s.samples = append(s.samples, x)
}

// halve merges neighbouring samples in pairs.
func (s *Series) halve() {
	out := s.samples[:0]
	for i := 0; i < len(s.samples); i += 2 {
		a := s.samples[i]
		if i+1 < len(s.samples) {
			a = merge(a, s.samples[i+1])
		}
		out = append(out, a)
	}
	s.samples = out
}

// merge is the sample of two consecutive intervals.
func merge(a, b transfer.Sample) transfer.Sample {
	m := transfer.Sample{
		At: b.At, Length: a.Length + b.Length,
		Bytes: a.Bytes + b.Bytes, Requests: a.Requests + b.Requests,
		Retries: a.Retries + b.Retries, SlowDowns: a.SlowDowns + b.SlowDowns,
		Objects: a.Objects + b.Objects, InFlight: max(a.InFlight, b.InFlight), Window: b.Window,
		Lanes:       slices.Clone(a.Lanes),
		RequestTime: a.RequestTime + b.RequestTime, WriteTime: a.WriteTime + b.WriteTime,
	}
	for i := range m.Lanes {
		if i < len(b.Lanes) {
			m.Lanes[i] += b.Lanes[i]
		}
	}
	return m
}

// Samples returns the series.
func (s *Series) Samples() []transfer.Sample { return s.samples }

// Stats summarise a series: the throughput of its intervals and the
// requests in flight at their ends.
type Stats struct {
	// Intervals is the number of samples; Every the interval length.
	Intervals int
	Every     time.Duration
	// MinGibps, MedianGibps and MaxGibps are over the full-length
	// intervals (a run's last, shorter one is left out when there are
	// others).
	MinGibps, MedianGibps, MaxGibps float64
	// InFlightMean and InFlightPeak are over the samples' ends, the
	// last one (the run's end, nothing in flight) left out.
	InFlightMean float64
	InFlightPeak int
}

// StatsOf summarises samples.
func StatsOf(samples []transfer.Sample) Stats {
	st := Stats{Intervals: len(samples)}
	if len(samples) == 0 {
		return st
	}
	full := samples
	if len(samples) > 1 {
		full = samples[:len(samples)-1]
	}
	st.Every = full[0].Length.Round(time.Millisecond)
	rates := make([]float64, len(full))
	var inflight int
	for i, x := range full {
		rates[i] = Gibps(x.Bytes, x.Length)
		inflight += x.InFlight
		st.InFlightPeak = max(st.InFlightPeak, x.InFlight)
	}
	slices.Sort(rates)
	st.MinGibps, st.MaxGibps = rates[0], rates[len(rates)-1]
	st.MedianGibps = rates[len(rates)/2]
	st.InFlightMean = float64(inflight) / float64(len(full))
	return st
}
