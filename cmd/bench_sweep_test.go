package cmd

import (
	"strings"
	"testing"

	"github.com/s3pd/s3pd/pkg/report"
	"github.com/s3pd/s3pd/pkg/sweep"
)

// TestSweepSaysHowItChose: the sweep's best line says why it is not the
// fastest row when it is not.
func TestSweepSaysHowItChose(t *testing.T) {
	fast := sweep.Result{Cell: sweep.Cell{PartSize: 16 << 20, Requests: 256}, Gibps: 0.401}
	cheap := sweep.Result{Cell: sweep.Cell{PartSize: 8 << 20, Requests: 64}, Gibps: 0.390}
	slow := sweep.Result{Cell: sweep.Cell{PartSize: 8 << 20, Requests: 16}, Gibps: 0.1}
	for _, tt := range []struct {
		best    sweep.Result
		results []sweep.Result
		want    string
	}{
		{fast, []sweep.Result{slow, fast}, "the fastest row"},
		// One unit per kind: the rate as every other line writes it.
		{cheap, []sweep.Result{slow, cheap, fast}, "of the rows within 5% of the fastest (--partsize 16MiB --max-concurrent-requests 256, " + report.RateOfGibps(0.401) + ")"},
	} {
		if got := bestReason(tt.best, tt.results); !strings.Contains(got, tt.want) || strings.Contains(got, "Gibps") {
			t.Errorf("best %+v: reason %q, want %q in it", tt.best.Cell, got, tt.want)
		}
	}
}

// TestCompareWritesPlainNumbers: bench compare's figures are never in
// exponent form (peak memory 25670 KiB, not 2.567e+04).
func TestCompareWritesPlainNumbers(t *testing.T) {
	for _, tt := range []struct {
		mean, sd float64
		n        int
		want     string
	}{
		{25670, 0, 1, "25670"},
		{25670.4, 1234.4, 3, "25670 ± 1234"},
		{1.23456, 0.00001234, 3, "1.235 ± 0.000012"},
		{568.3, 12.34, 3, "568.3 ± 12"},
	} {
		if got := meanText(tt.mean, tt.sd, tt.n); got != tt.want {
			t.Errorf("meanText(%v, %v, %d): %q, want %q", tt.mean, tt.sd, tt.n, got, tt.want)
		}
	}
}
