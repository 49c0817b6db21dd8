package cmd

import (
	"strings"
	"testing"

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
		{cheap, []sweep.Result{slow, cheap, fast}, "of the rows within 5% of the fastest (--partsize 16MiB --max-concurrent-requests 256, 0.401 Gibps)"},
	} {
		if got := bestReason(tt.best, tt.results); !strings.Contains(got, tt.want) {
			t.Errorf("best %+v: reason %q, want %q in it", tt.best.Cell, got, tt.want)
		}
	}
}
