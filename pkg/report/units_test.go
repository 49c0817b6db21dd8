package report

import (
	"strings"
	"testing"
)

func TestRateIsOnePairOfUnits(t *testing.T) {
	tests := []struct {
		bps  float64
		want string
	}{
		{512, "512 B/s"},
		{300 << 10, "300 KiB/s"},
		{512 << 20, "512 MiB/s (4.29 Gbit/s)"},
		{689 << 20, "689 MiB/s (5.78 Gbit/s)"},
		{1.5 * (1 << 30), "1.50 GiB/s (12.9 Gbit/s)"},
		{12.5e9, "11.6 GiB/s (100 Gbit/s)"},
	}
	for _, tt := range tests {
		if got := Rate(tt.bps); got != tt.want {
			t.Errorf("Rate(%g) = %q, want %q", tt.bps, got, tt.want)
		}
	}
	if got := RateOfGibps(8); got != "1.00 GiB/s (8.59 Gbit/s)" {
		t.Errorf("RateOfGibps(8) = %q", got)
	}
}

// TestReadRoundsDerivesTheRates: bench compare reads MiB/s and decimal
// Gbit/s from bytes_per_second, and from gibps in older summaries.
func TestReadRoundsDerivesTheRates(t *testing.T) {
	in := `{"type":"summary","bytes_per_second":1250000000}
{"type":"summary","gibps":8}
`
	rounds, err := ReadRounds(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []struct{ mib, gbps float64 }{{1192.09, 10}, {1024, 8.589934592}} {
		r := rounds[i].Figures
		if d := r["mib_per_s"] - want.mib; d < -0.01 || d > 0.01 {
			t.Errorf("round %d: mib_per_s %v, want %v", i, r["mib_per_s"], want.mib)
		}
		if d := r["gbps"] - want.gbps; d < -1e-6 || d > 1e-6 {
			t.Errorf("round %d: gbps %v, want %v", i, r["gbps"], want.gbps)
		}
	}
}
