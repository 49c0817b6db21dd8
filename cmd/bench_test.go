package cmd

import (
	"strings"
	"testing"
)

// TestBenchSaysWhatItsFiguresMean: the model line names the ceiling the
// emulator's network model allows, and the terms line explains the
// summary's own words.
func TestBenchSaysWhatItsFiguresMean(t *testing.T) {
	if got, want := modelLine(90<<20, 256), "at most 90.0 MiB/s (0.75 Gbit/s) per connection x 256 requests in flight = 22.5 GiB/s"; !strings.Contains(got, want) {
		t.Errorf("modelLine: %q, want it to hold %q", got, want)
	}
	if got := modelLine(0, 256); !strings.Contains(got, "no per-connection cap") {
		t.Errorf("modelLine without a cap: %q", got)
	}
	for _, word := range []string{"hedged =", "window N (why) =", "tail pieces =", "overfetch ="} {
		if !strings.Contains(benchTerms, word) {
			t.Errorf("terms line lacks %q: %s", word, benchTerms)
		}
	}
}
