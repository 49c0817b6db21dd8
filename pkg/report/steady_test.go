package report

import (
	"math"
	"testing"
	"time"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// series builds one-second samples from MiB/s rates and windows, plus a
// short last sample (the run's rest) of 10 ms.
func series(mibs []float64, windows []int) []transfer.Sample {
	var ss []transfer.Sample
	for i, r := range mibs {
		ss = append(ss, transfer.Sample{At: time.Duration(i+1) * time.Second, Length: time.Second,
			Bytes: int64(r * (1 << 20)), Window: windows[i]})
	}
	last := time.Duration(len(mibs))*time.Second + 10*time.Millisecond
	return append(ss, transfer.Sample{At: last, Length: 10 * time.Millisecond, Bytes: 1 << 20, Window: windows[len(windows)-1]})
}

func TestSteadyOfLeavesTheWarmupOut(t *testing.T) {
	for _, tt := range []struct {
		name             string
		mibs             []float64
		windows          []int
		warmup           time.Duration // <0: auto
		wantWarmup       time.Duration
		wantOK           bool
		wantIntervals    int
		median, p10, p90 float64 // MiB/s
		wantSettled      bool
	}{
		{name: "ramp then flat: the climb is left out",
			mibs:    []float64{100, 400, 800, 1000, 1000, 1000, 1000, 1000},
			windows: []int{16, 64, 128, 128, 128, 128, 128, 128},
			warmup:  -1, wantWarmup: 3 * time.Second, wantOK: true, wantSettled: true, wantIntervals: 5,
			median: 1000, p10: 1000, p90: 1000},
		{name: "spread: median and interpolated p10, p90",
			mibs:    []float64{50, 100, 200, 300, 400, 500, 600},
			windows: []int{32, 64, 64, 64, 64, 64, 64},
			warmup:  -1, wantWarmup: 2 * time.Second, wantOK: true, wantSettled: true, wantIntervals: 5,
			median: 400, p10: 240, p90: 560},
		{name: "a fixed window: only the first interval is warm-up",
			mibs:    []float64{10, 500, 500, 500},
			windows: []int{256, 256, 256, 256},
			warmup:  -1, wantWarmup: time.Second, wantOK: true, wantSettled: true, wantIntervals: 3,
			median: 500, p10: 500, p90: 500},
		{name: "all ramp: the window climbed to the end",
			mibs:    []float64{100, 200, 400, 800},
			windows: []int{16, 32, 64, 128},
			warmup:  -1, wantWarmup: 4*time.Second + 10*time.Millisecond, wantOK: false, wantSettled: false, wantIntervals: 0},
		{name: "settled too late for MinSteady intervals",
			mibs:    []float64{100, 200, 400, 800, 800, 800},
			windows: []int{16, 32, 64, 128, 128, 128},
			warmup:  -1, wantWarmup: 4 * time.Second, wantOK: false, wantSettled: true, wantIntervals: 2},
		{name: "asked warm-up of 2 s",
			mibs:    []float64{1, 2, 300, 300, 600},
			windows: []int{16, 32, 64, 128, 256},
			warmup:  2 * time.Second, wantWarmup: 2 * time.Second, wantOK: true, wantSettled: true, wantIntervals: 3,
			median: 300, p10: 300, p90: 540},
		{name: "asked warm-up longer than the run",
			mibs:    []float64{100, 100},
			windows: []int{16, 16},
			warmup:  time.Minute, wantWarmup: time.Minute, wantOK: false, wantSettled: false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st := SteadyOf(series(tt.mibs, tt.windows), tt.warmup)
			if st.Warmup != tt.wantWarmup || st.OK != tt.wantOK || st.Settled != tt.wantSettled || st.Intervals != tt.wantIntervals {
				t.Fatalf("got warm-up %s, settled %v, %d intervals, ok %v; want %s, %v, %d, %v",
					st.Warmup, st.Settled, st.Intervals, st.OK, tt.wantWarmup, tt.wantSettled, tt.wantIntervals, tt.wantOK)
			}
			for _, c := range []struct {
				name      string
				got, want float64
			}{{"median", st.Median, tt.median}, {"p10", st.P10, tt.p10}, {"p90", st.P90, tt.p90}} {
				if math.Abs(c.got/(1<<20)-c.want) > 0.01 {
					t.Errorf("%s %.2f MiB/s, want %.2f", c.name, c.got/(1<<20), c.want)
				}
			}
		})
	}
}

func TestSteadiedEndsOnlyAFlatRun(t *testing.T) {
	for _, tt := range []struct {
		name  string
		rates []float64
		want  bool
	}{
		{"too few intervals", []float64{100, 100, 100, 100, 100}, false},
		{"flat", []float64{100, 100, 100, 100, 100, 100}, true},
		{"within 10%", []float64{100, 98, 103, 108, 95, 109}, true},
		{"still climbing", []float64{100, 110, 120, 130, 140, 150}, false},
		{"falling by more than 10%", []float64{100, 100, 100, 85, 85, 85}, false},
		{"an outlier does not move a median", []float64{100, 100, 100, 100, 10, 100}, true},
		{"only the last 2K count", []float64{1, 1, 1, 100, 100, 100, 100, 100, 100}, true},
		{"zero before", []float64{0, 0, 0, 0, 0, 0}, false},
	} {
		if got := Steadied(tt.rates); got != tt.want {
			t.Errorf("%s: Steadied(%v) = %v, want %v", tt.name, tt.rates, got, tt.want)
		}
	}
}
