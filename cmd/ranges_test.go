package cmd

import (
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// TestSummaryShowsHowRangesWereFetched: the human summary and the JSON
// line carry the ranges fetched, the tail's pieces, the GETs per range
// and the bytes received and not written.
func TestSummaryShowsHowRangesWereFetched(t *testing.T) {
	r := &reporter{log: zap.NewNop()}
	s := transfer.Summary{Objects: 1, Bytes: 8 << 20, Elapsed: time.Second, Requests: 10, Ranges: 8, Hedged: 1, Retries: 1, Splits: 5, Overfetch: 2048}
	var b strings.Builder
	r.printSummary(&b, s, runOutput{}, false, nil, nil)
	if want := "ranges: 8 (5 tail pieces), 1.250 GETs per range, overfetch: 2.00 KiB"; !strings.Contains(b.String(), want) {
		t.Errorf("summary lacks %q:\n%s", want, b.String())
	}
	line := r.summary(s, runOutput{})
	if line.Ranges != 8 || line.GETsPerRange != 1.25 || line.OverfetchBytes != 2048 || line.Splits != 5 || line.Hedged != 1 {
		t.Errorf("summary line %+v: want 8 ranges, 1.25 GETs each, 2048 bytes overfetched, 5 tail pieces, 1 hedged", line)
	}
}
