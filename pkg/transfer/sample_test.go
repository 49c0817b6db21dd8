package transfer

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

func TestHistogramQuantilesBeyondP99(t *testing.T) {
	var h latencyBuckets
	for i := 1; i <= 10000; i++ {
		h.add(time.Duration(i) * time.Millisecond / 10) // 0.1 ms .. 1000 ms
	}
	snap := h.snapshot()
	tests := []struct {
		q        float64
		lo, high time.Duration
	}{
		{0.50, 480 * time.Millisecond, 580 * time.Millisecond},
		{0.90, 880 * time.Millisecond, 1020 * time.Millisecond},
		{0.999, 980 * time.Millisecond, 1130 * time.Millisecond},
	}
	for _, tt := range tests {
		if got := snap.Quantile(tt.q); got < tt.lo || got > tt.high {
			t.Errorf("Quantile(%v) = %s, want within [%s, %s]", tt.q, got, tt.lo, tt.high)
		}
	}
	if snap.Total() != 10000 {
		t.Errorf("Total() = %d, want 10000", snap.Total())
	}
	if got := (Histogram{}).Quantile(0.5); got != 0 {
		t.Errorf("empty Quantile = %s, want 0", got)
	}
}

func TestEngineTimesRequestsAndWrites(t *testing.T) {
	src := slowSource{newMemSource(map[string]int64{"a": 4000, "b": 4000})}
	sink := &slowWriteSink{memSink: newMemSink(), delay: 3 * time.Millisecond}
	sum := runEngine(t, src, sink, Options{PartSize: 1000, Threads: 2})
	if sum.Request.Total() != sum.Requests || sum.TTFB.Total() != sum.Requests {
		t.Fatalf("request histogram holds %d, ttfb %d, want one per request (%d)", sum.Request.Total(), sum.TTFB.Total(), sum.Requests)
	}
	// Every request waits 2 ms for its headers and 3 ms in its one write.
	if p50 := sum.Request.Quantile(0.5); p50 < 5*time.Millisecond {
		t.Errorf("request time p50 %s, want at least 5ms", p50)
	}
	if sum.WriteTime < 8*3*time.Millisecond || sum.WriteTime > sum.RequestTime {
		t.Errorf("write time %s of request time %s, want at least 24ms (8 writes of 3ms) and at most the request time", sum.WriteTime, sum.RequestTime)
	}
}

// slowWriteSink is a memSink whose writes take delay each.
type slowWriteSink struct {
	*memSink
	delay time.Duration
}

type slowFile struct {
	File
	delay time.Duration
}

func (s *slowWriteSink) Create(ctx context.Context, o Object) (File, error) {
	f, err := s.memSink.Create(ctx, o)
	return slowFile{f, s.delay}, err
}

func (f slowFile) WriteAt(p []byte, off int64) (int, error) {
	time.Sleep(f.delay) // the slow disk injected, not a wait
	return f.File.WriteAt(p, off)
}

func TestEngineSamplesAddUpToTheSummary(t *testing.T) {
	sizes := map[string]int64{}
	for i := range 12 {
		sizes[fmt.Sprint("k", i)] = 8000
	}
	src := slowSource{newMemSource(sizes)}
	src.fault = func(key string, off, n int64, attempt int) error {
		if off == 0 && attempt == 1 {
			return errSlowDown
		}
		return nil
	}
	var mu sync.Mutex
	var samples []Sample
	lanes := []Lane{{Name: "a", Source: src}, {Name: "b", Source: src}}
	e, err := New(lanes, newMemSink(), Options{PartSize: 1000, Workers: 4, Threads: 4,
		Backoff:     Backoff{Base: time.Millisecond, Cap: time.Millisecond, MaxAttempts: 5},
		SampleEvery: 5 * time.Millisecond,
		OnSample:    func(s Sample) { mu.Lock(); samples = append(samples, s); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := e.Run(context.Background())
	if err != nil || sum.Objects != 12 {
		t.Fatalf("run: %+v, %v", sum, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(samples) < 3 {
		t.Fatalf("%d samples of a run of %s sampled every 5ms, want at least 3", len(samples), sum.Elapsed)
	}
	var got Sample
	lanesSum := make([]int64, 2)
	peak := 0
	for i, s := range samples {
		if i > 0 && s.At-s.Length != samples[i-1].At {
			t.Errorf("sample %d starts at %s, want the end of the one before, %s", i, s.At-s.Length, samples[i-1].At)
		}
		got.Bytes += s.Bytes
		got.Requests += s.Requests
		got.Retries += s.Retries
		got.SlowDowns += s.SlowDowns
		got.Objects += s.Objects
		for j, n := range s.Lanes {
			lanesSum[j] += n
		}
		peak = max(peak, s.InFlight)
	}
	want := Sample{Bytes: sum.Bytes, Requests: sum.Requests, Retries: sum.Retries, SlowDowns: sum.SlowDowns, Objects: 12}
	if got.Bytes != want.Bytes || got.Requests != want.Requests || got.Retries != want.Retries || got.SlowDowns != want.SlowDowns || got.Objects != want.Objects {
		t.Errorf("samples add up to %+v, want the summary's %+v", got, want)
	}
	if sum.SlowDowns != 12 {
		t.Errorf("%d SlowDowns, want 12 (one per object)", sum.SlowDowns)
	}
	if lanesSum[0] != sum.Lanes[0].Bytes || lanesSum[1] != sum.Lanes[1].Bytes {
		t.Errorf("lane samples add up to %v, want %d and %d", lanesSum, sum.Lanes[0].Bytes, sum.Lanes[1].Bytes)
	}
	if peak < 1 || peak > 16 {
		t.Errorf("peak requests in flight %d, want 1..16", peak)
	}
	if last := samples[len(samples)-1].InFlight; last != 0 {
		t.Errorf("%d requests in flight at the end of the run, want 0", last)
	}
	// Each sample carries the window at its end, within the budget.
	for i, s := range samples {
		if s.Window < 1 || s.Window > 256 {
			t.Errorf("sample %d: window %d, want 1..256", i, s.Window)
		}
	}
}
