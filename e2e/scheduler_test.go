package e2e

import (
	"testing"
	"time"

	"github.com/s3pd/s3pd/pkg/s3emu"
)

// TestSlowDownMakesRequestsInFlightFall runs the same download against a
// server that answers SlowDown above 16 requests in flight, with a budget
// of 64: the adaptive window backs off to what the server serves, so far
// fewer GETs are throttled than with the window held at the budget.
func TestSlowDownMakesRequestsInFlightFall(t *testing.T) {
	s := emuStore(t, s3emu.Options{
		Dataset:  "t:64:128KiB",
		TTFB:     20 * time.Millisecond,
		ConnRate: 2 << 20, // each GET lasts about 80 ms: requests overlap
		Throttle: s3emu.Throttle{MaxInFlight: 16},
	})
	throttled := map[string]int64{}
	for _, mode := range []string{"on", "off"} {
		s.emu.ResetStats()
		r := run(t, nil, s.cmd("get", "--benchmark", "--quiet", "--max-concurrent-requests", "64", "--workers", "64", "--adaptive", mode, s.url("t/"))...)
		if r.code != 0 {
			t.Fatalf("--adaptive %s: exit %d\n%s", mode, r.code, r.stderr)
		}
		st := s.emu.Stats()
		if served := st.GetRequests - st.ThrottledGets; served != 64 {
			t.Fatalf("--adaptive %s: %d GETs served, want 64 (stats %+v)", mode, served, st)
		}
		throttled[mode] = st.ThrottledGets
		t.Logf("--adaptive %s: %d GETs, %d throttled", mode, st.GetRequests, st.ThrottledGets)
	}
	// The first window (32) meets 16 SlowDowns over the server's 16;
	// after them the window follows the server: at most as many again.
	// Held at 64, the window keeps meeting more.
	if throttled["on"] > 32 {
		t.Errorf("--adaptive on: %d GETs throttled, want at most 32", throttled["on"])
	}
	if throttled["off"] <= throttled["on"] {
		t.Errorf("--adaptive off: %d GETs throttled, want more than the adaptive window's %d", throttled["off"], throttled["on"])
	}
}
