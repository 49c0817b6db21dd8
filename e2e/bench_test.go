package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/s3pd/s3pd/pkg/s3emu"
)

// benchSummary is the --json summary line of s3pd bench.
type benchSummary struct {
	Type              string  `json:"type"`
	Objects           int64   `json:"objects"`
	Bytes             int64   `json:"bytes"`
	Requests          int64   `json:"requests"`
	Failed            int64   `json:"failed"`
	TTFB50ms          float64 `json:"ttfb_p50_ms"`
	TTFB99ms          float64 `json:"ttfb_p99_ms"`
	PeakRSS           int64   `json:"peak_rss_kib"`
	EmulatorInProcess bool    `json:"emulator_in_process"`
	Scheme            string  `json:"scheme"`
	Transport         string  `json:"transport"`
	TLSHandshakes     int64   `json:"tls_handshakes"`
	TLSResumed        int64   `json:"tls_resumed"`
	TLSHandshakeMS    float64 `json:"tls_handshake_ms"`
}

// lastJSON decodes the last line of stdout into v.
func lastJSON(t *testing.T, stdout string, v any) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), v); err != nil {
		t.Fatalf("last line of stdout is not JSON: %v\n%s", err, stdout)
	}
}

// TestBenchEmbedded runs the README's first command, s3pd bench with no
// URL, on a small dataset: the embedded emulator with its network model,
// every object fetched, a report with latency figures.
func TestBenchEmbedded(t *testing.T) {
	args := []string{"bench", "--dataset", "big:2:20MiB,small:40:64KiB", "--ttfb", "20ms", "--conn-rate", "50MB"}
	r := run(t, nil, append(args, "--json")...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	var s benchSummary
	lastJSON(t, r.stdout, &s)
	wantBytes := int64(2*20<<20 + 40*64<<10)
	// 20 MiB objects go in 8 MiB ranges (3 each), 64 KiB ones in one GET.
	if s.Objects != 42 || s.Bytes != wantBytes || s.Failed != 0 || s.Requests < 46 {
		t.Fatalf("summary %+v, want 42 objects, %d bytes, at least 46 requests", s, wantBytes)
	}
	// Every response waits 20 ms before its first byte.
	if s.TTFB50ms < 20 || s.TTFB99ms < s.TTFB50ms {
		t.Fatalf("time to first byte p50 %.1f ms, p99 %.1f ms: want p50 >= 20 ms (the emulator's delay) and p99 >= p50", s.TTFB50ms, s.TTFB99ms)
	}
	if !s.EmulatorInProcess || s.PeakRSS <= 0 {
		t.Fatalf("summary %+v: want a peak RSS and emulator_in_process", s)
	}
	// Over HTTPS by default, as S3: every connection a handshake.
	if s.Scheme != "https" || s.Transport != "HTTPS (self-signed, in-process)" || s.TLSHandshakes < 1 || s.TLSHandshakeMS <= 0 {
		t.Fatalf("summary %+v: want https, the transport named, handshakes counted and timed", s)
	}

	r = run(t, nil, args...)
	for _, want := range []string{"emulator: https://127.0.0.1:", "over HTTPS (self-signed, in-process)", "objects: 42 transferred",
		"time to first byte: p50", "embedded emulator's included", "tls: over HTTPS (self-signed, in-process); "} {
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Fatalf("exit %d, stdout lacks %q:\n%s\n%s", r.code, want, r.stdout, r.stderr)
		}
	}
}

// TestBenchURL measures a bucket given by URL: the engine against an
// S3 server outside the process, nothing written.
func TestBenchURL(t *testing.T) {
	s := emuStore(t, s3emu.Options{Dataset: "d:5:3MiB"})
	r := run(t, nil, s.cmd("bench", "--json", s.url("d/"))...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	var sum benchSummary
	lastJSON(t, r.stdout, &sum)
	if sum.Objects != 5 || sum.Bytes != 5*3<<20 || sum.EmulatorInProcess {
		t.Fatalf("summary %+v, want 5 objects of 3 MiB and no embedded emulator", sum)
	}
}

// TestBenchSaysOneRoundIsNoisy: a bench of one round says that a second
// can differ, and how to tell change from noise; --repeat does not.
func TestBenchSaysOneRoundIsNoisy(t *testing.T) {
	const note = "one round: a second run on a busy machine can differ by half; --repeat 3 and s3pd bench compare"
	r := run(t, nil, "bench", "--dataset", "d:2:1MiB", "--ttfb", "1ms")
	if r.code != 0 || !strings.Contains(r.stdout, note) {
		t.Errorf("bench: exit %d, stdout lacks the note\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = run(t, nil, "bench", "--repeat", "2", "--dataset", "d:2:1MiB", "--ttfb", "1ms")
	if r.code != 0 || strings.Contains(r.stdout, "one round:") {
		t.Errorf("bench --repeat 2: exit %d, stdout has the note\n%s%s", r.code, r.stdout, r.stderr)
	}
}
