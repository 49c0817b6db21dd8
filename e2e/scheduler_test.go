package e2e

import (
	"fmt"
	"path/filepath"
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
		r := run(t, nil, s.cmd("get", "--benchmark", "--json", "--quiet", "--max-concurrent-requests", "64", "--workers", "64", "--adaptive", mode, s.url("t/"))...)
		if r.code != 0 {
			t.Fatalf("--adaptive %s: exit %d\n%s", mode, r.code, r.stderr)
		}
		var sum struct {
			Hedged int64 `json:"hedged"`
		}
		lastJSON(t, r.stdout, &sum)
		// A range taken over as a straggler is served twice.
		st := s.emu.Stats()
		if served := st.GetRequests - st.ThrottledGets; served != 64+sum.Hedged {
			t.Fatalf("--adaptive %s: %d GETs served, want 64 and %d taken over (stats %+v)", mode, served, sum.Hedged, st)
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

// TestWindowFindsTheServersLimitWithFewSlowDowns: the server throttles
// above 40 requests in flight, more than the window's start (32), and
// every request lasts about one time to first byte. The window doubles
// in steps, each once the last was answered, so it crosses the limit once,
// by one step, and then follows what the server serves: the peak stays
// near the limit and few GETs are throttled. A window that grew on a
// timer, without waiting for the last step's answers, sent steps into
// the storm before the first SlowDown came back.
func TestWindowFindsTheServersLimitWithFewSlowDowns(t *testing.T) {
	const objects, limit = 400, 40
	s := emuStore(t, s3emu.Options{
		Dataset:  fmt.Sprintf("w:%d:16KiB", objects),
		TTFB:     40 * time.Millisecond,
		Throttle: s3emu.Throttle{MaxInFlight: limit},
	})
	r := run(t, nil, s.cmd("get", "--benchmark", "--json", "--quiet", s.url("w/"))...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	var sum struct {
		Objects   int   `json:"objects"`
		SlowDowns int64 `json:"slowdowns"`
		Peak      int   `json:"in_flight_peak"`
	}
	lastJSON(t, r.stdout, &sum)
	st := s.emu.Stats()
	t.Logf("%d GETs, %d throttled; peak %d in flight", st.GetRequests, st.ThrottledGets, sum.Peak)
	if sum.Objects != objects || st.GetRequests-st.ThrottledGets != objects {
		t.Fatalf("%d objects, %d GETs served, want %d (stats %+v)", sum.Objects, st.GetRequests-st.ThrottledGets, objects, st)
	}
	// One step over 40 (from 32 to 64) throttles about 24, and the
	// requests sent to replace those that ended before the first
	// SlowDown came back are throttled too (the server counts the
	// throttled ones in flight): 30-65 here. A fifth of the GETs, or a peak twice the limit, means
	// the window kept overshooting.
	if st.ThrottledGets > objects/5 || sum.Peak > 2*limit {
		t.Errorf("%d of %d GETs throttled, peak %d in flight: want at most %d and %d", st.ThrottledGets, st.GetRequests, sum.Peak, objects/5, 2*limit)
	}
}

// TestOneObjectTakesTheBudget: the ranges of a single object share the
// whole budget, not a per-object share of it (the original s3pd's 8
// threads), unless --threads caps them; with fewer parts than idle
// slots, the ranges in flight split so that more than the parts are in
// flight. The object is byte-exact either way.
func TestOneObjectTakesTheBudget(t *testing.T) {
	s := emuStore(t, s3emu.Options{
		Dataset:  "one:1:32MiB",
		TTFB:     20 * time.Millisecond,
		ConnRate: 8 << 20, // each 512 KiB range lasts about 80 ms: ranges overlap
	})
	for _, tc := range []struct {
		name     string
		flags    []string
		min, max int  // requests in flight at the peak
		split    bool // ranges must split
	}{
		{"default", []string{"--partsize", "512KiB"}, 9, 64, false},
		{"budget 32", []string{"--partsize", "512KiB", "--max-concurrent-requests", "32"}, 9, 32, false},
		{"threads 4 caps", []string{"--partsize", "512KiB", "--threads", "4", "--max-concurrent-requests", "32"}, 1, 4, false},
		{"8 parts split", []string{"--partsize", "4MiB"}, 9, 32, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s.emu.ResetStats()
			dest := filepath.Join(t.TempDir(), "one.bin")
			args := append([]string{"--json", "--quiet"}, tc.flags...)
			r := run(t, nil, s.cmd("get", append(args, s.url("one/00000000"), dest)...)...)
			if r.code != 0 {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
			}
			var sum struct {
				Verified int `json:"verified_objects"`
				Peak     int `json:"in_flight_peak"`
				Splits   int `json:"splits"`
			}
			lastJSON(t, r.stdout, &sum)
			st := s.emu.Stats()
			t.Logf("peak %d in flight (server saw %d)", sum.Peak, st.MaxInFlight)
			// The server counts a request until its handler returns, once
			// the last bytes are in the socket's buffer: with splits it
			// sees fewer at once than the client has in flight.
			if sum.Peak < tc.min || sum.Peak > tc.max || !tc.split && st.MaxInFlight < int64(tc.min) || st.MaxInFlight > int64(tc.max) {
				t.Errorf("peak in flight %d, server saw %d: want between %d and %d", sum.Peak, st.MaxInFlight, tc.min, tc.max)
			}
			if tc.split != (sum.Splits > 0) {
				t.Errorf("%d ranges split, want some: %v", sum.Splits, tc.split)
			}
			if sum.Verified != 1 {
				t.Errorf("%d objects verified, want 1", sum.Verified)
			}
			checkSynthetic(t, dest, "one/00000000", 32<<20)
		})
	}
}

// TestStalledGetsAreTakenOver: a few GETs stall half-way for far longer
// than the run, while the others progress. Each stalled range
// is taken over from the byte it reached, and every object arrives whole
// and verified.
func TestStalledGetsAreTakenOver(t *testing.T) {
	s := emuStore(t, s3emu.Options{
		Dataset:  "s:40:1MiB",
		ConnRate: 4 << 20, // each GET lasts about 250 ms
		Stalls:   s3emu.Stalls{Fraction: 0.05, For: time.Minute, Seed: 7},
	})
	dest := t.TempDir()
	r := run(t, nil, s.cmd("get", "--json", "--quiet", "--workers", "8", "--max-concurrent-requests", "8", s.url("s/"), dest+"/")...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	var sum struct {
		Objects  int   `json:"objects"`
		Verified int   `json:"verified_objects"`
		Hedged   int64 `json:"hedged"`
		Retries  int64 `json:"retries"`
	}
	lastJSON(t, r.stdout, &sum)
	st := s.emu.Stats()
	if st.Stalls == 0 {
		t.Fatalf("the emulator stalled no GET: the test proves nothing (stats %+v)", st)
	}
	if sum.Objects != 40 || sum.Verified != 40 {
		t.Fatalf("summary %+v, want 40 objects, all verified", sum)
	}
	if sum.Hedged < st.Stalls || sum.Retries != 0 {
		t.Errorf("hedged %d, retries %d for %d stalled GETs: want each taken over, none retried as a failure", sum.Hedged, sum.Retries, st.Stalls)
	}
}

// TestStragglersRestSpreadsOverIdleSlots: the one GET of a run stalls
// half-way through its object with every other slot idle. It is taken
// over and its other half fetched in pieces over those slots, not in one
// request; the server sends each byte of the object once, and the object
// lands whole and verified.
func TestStragglersRestSpreadsOverIdleSlots(t *testing.T) {
	const size = 4 << 20
	s := emuStore(t, s3emu.Options{
		Dataset:  "one:1:4MiB",
		ConnRate: 8 << 20, // the first half takes about 250 ms
		// The seed stalls the whole-object GET and none of the pieces
		// (which would then wait out the stall, not fail).
		Stalls:      s3emu.Stalls{Fraction: 0.3, For: 3 * time.Second, Seed: 64},
		LogRequests: true,
	})
	dest := t.TempDir()
	r := run(t, nil, s.cmd("get", "--json", "--quiet", "--max-concurrent-requests", "8", s.url("one/"), dest+"/")...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	sum := summaryOf(t, r.stdout)
	st := s.emu.Stats()
	if st.Stalls != 1 {
		t.Fatalf("the emulator stalled %d GETs, want the first alone (stats %+v)", st.Stalls, st)
	}
	if sum["hedged"].(float64) != 1 || sum["splits"].(float64) < 2 || sum["verified_objects"].(float64) != 1 {
		t.Errorf("hedged %v, splits %v, verified %v: want the stalled GET taken over once, its rest in pieces, the object verified",
			sum["hedged"], sum["splits"], sum["verified_objects"])
	}
	if gets := st.GetRequests; gets < 4 {
		t.Errorf("the server answered %d GETs: want the rest in pieces beside the takeover", gets)
	}
	if sent := s.emu.BytesSentFor(s.bucket, "one/00000000"); sent != size {
		for _, q := range s.emu.Log() {
			t.Logf("%s %s %q %d", q.Method, q.Key, q.Range, q.Bytes)
		}
		t.Errorf("the server sent %d bytes of the object, want each of its %d once", sent, size)
	}
	checkSynthetic(t, dest+"/00000000", "one/00000000", size)
}
