package e2e

import (
	"encoding/json"
	"math"
	"regexp"
	"sort"
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
	CPUSeconds        float64 `json:"cpu_seconds"`
	EmulatorCPU       float64 `json:"emulator_cpu_seconds"`
	EmulatorPeakRSS   int64   `json:"emulator_peak_rss_kib"`
	Seconds           float64 `json:"seconds"`
	Interrupted       int64   `json:"interrupted"`
	SteadyBPS         float64 `json:"steady_bytes_per_second"`
	SteadyP10         float64 `json:"steady_p10_bytes_per_second"`
	SteadyP90         float64 `json:"steady_p90_bytes_per_second"`
	SteadyReached     bool    `json:"steady_reached"`
	SteadyIntervals   int     `json:"steady_intervals"`
	WarmupS           float64 `json:"warmup_s"`
	Bottleneck        string  `json:"bottleneck"`
	Classes           []struct {
		Name             string  `json:"name"`
		SizeBytes        int64   `json:"size_bytes"`
		Objects          int64   `json:"objects"`
		Bytes            int64   `json:"bytes"`
		BytesPerSecond   float64 `json:"bytes_per_second"`
		ObjectsPerSecond float64 `json:"objects_per_second"`
		TTFB50ms         float64 `json:"ttfb_p50_ms"`
		TTFB99ms         float64 `json:"ttfb_p99_ms"`
	} `json:"classes"`
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
// URL, on a small dataset (read once): the emulator in its own process
// with its network model, every object fetched, a report with latency
// figures, the client's and the emulator's CPU and memory apart, and a
// row per class of the dataset.
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
	if s.EmulatorInProcess || s.PeakRSS <= 0 || s.EmulatorPeakRSS <= 0 || s.EmulatorCPU <= 0 || s.CPUSeconds <= 0 {
		t.Fatalf("summary %+v: want the client's and the emulator's peak memory and CPU apart, not emulator_in_process", s)
	}
	if len(s.Classes) != 2 || s.Classes[0].Name != "big" || s.Classes[0].Objects != 2 || s.Classes[0].Bytes != 2*20<<20 ||
		s.Classes[1].Name != "small" || s.Classes[1].Objects != 40 || s.Classes[1].SizeBytes != 64<<10 ||
		s.Classes[1].ObjectsPerSecond <= 0 || s.Classes[1].TTFB50ms < 20 || s.Classes[1].TTFB99ms < s.Classes[1].TTFB50ms {
		t.Fatalf("classes %+v, want big (2 objects, 40 MiB) and small (40 of 64 KiB), with rates and a first byte after the 20 ms delay", s.Classes)
	}
	// Over HTTPS by default, as S3: every connection a handshake.
	if s.Scheme != "https" || s.Transport != "HTTPS (self-signed, emulator process)" || s.TLSHandshakes < 1 || s.TLSHandshakeMS <= 0 {
		t.Fatalf("summary %+v: want https, the transport named, handshakes counted and timed", s)
	}

	r = run(t, nil, args...)
	for _, want := range []string{"emulator: https://127.0.0.1:", "over HTTPS (self-signed), in process ", "objects: 42 transferred",
		"time to first byte: p50", "cpu: client ", "; emulator ", "class big (20.0 MiB): 2 objects", "tls: over HTTPS (self-signed, emulator process); ",
		"\nmodel: ", "\nterms: hedged = "} {
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Fatalf("exit %d, stdout lacks %q:\n%s\n%s", r.code, want, r.stdout, r.stderr)
		}
	}
	// The headline comes first: the steady figure, or why there is none.
	if i := strings.Index(r.stdout, "\nthroughput, steady: "); i < 0 || i > strings.Index(r.stdout, "objects: ") {
		t.Errorf("stdout does not open its summary with the steady line:\n%s", r.stdout)
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
	if sum.Objects != 5 || sum.Bytes != 5*3<<20 || sum.EmulatorInProcess || sum.EmulatorCPU != 0 {
		t.Fatalf("summary %+v, want 5 objects of 3 MiB and no emulator of bench's own", sum)
	}
	// Too small a prefix for a steady figure says so, and how to get one.
	r = run(t, nil, s.cmd("bench", s.url("d/"))...)
	if r.code != 0 || !regexp.MustCompile(`(?m)^throughput, steady: not reached: the ramp took .* of the .* run \(\d+%\).*the prefix is too short for a steady figure; --duration 30s reads it again`).MatchString(r.stdout) {
		t.Errorf("exit %d, want the steady line to say the prefix is too small:\n%s", r.code, r.stdout)
	}

	// --duration reads the prefix again, the same keys, for its time (8
	// requests at 2 MiB/s: about 16 MiB a second).
	paced := emuStore(t, s3emu.Options{Dataset: "d:5:1MiB", ConnRate: 2 << 20})
	r = run(t, nil, paced.cmd("bench", "--json", "--duration", "1s", "--max-concurrent-requests", "8", paced.url("d/"))...)
	if r.code != 0 {
		t.Fatalf("bench --duration 1s URL: exit %d\n%s", r.code, r.stderr)
	}
	lastJSON(t, r.stdout, &sum)
	if sum.Objects <= 5 || sum.Failed != 0 || sum.Seconds < 0.9 || sum.Seconds > 5 {
		t.Errorf("bench --duration 1s of a 5-object prefix: %d objects, %d failed in %.2f s; want it read again for about 1 s", sum.Objects, sum.Failed, sum.Seconds)
	}
}

// TestBenchDurationRereadsTheDataset: bench --duration 2s runs for about
// 2 s on a dataset it reads in a fraction of that, reading it again under
// fresh names; the steady figure is the median of the interval lines
// after the warm-up, which it leaves out; each class of the dataset has
// its row; the emulator's CPU is its own. The connection pace bounds the
// bytes moved (16 requests at 2 MB/s: under 70 MiB).
func TestBenchDurationRereadsTheDataset(t *testing.T) {
	r := run(t, nil, "bench", "--json", "--duration", "2s", "--warmup", "500ms", "--interval", "100ms",
		"--dataset", "d:4:1MiB,s:16:64KiB", "--ttfb", "2ms", "--conn-rate", "2MB", "--max-concurrent-requests", "16")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	lines := checkLines(t, jsonSpec(t), r.stdout)
	var s benchSummary
	lastJSON(t, r.stdout, &s)
	const dataset = 4<<20 + 16<<10*4
	if s.Seconds < 1.8 || s.Seconds > 8 || s.Failed != 0 {
		t.Fatalf("ran %.2f s with %d failed, want about 2 s (1.8 to 8) and none failed", s.Seconds, s.Failed)
	}
	if s.Objects <= 20 || s.Bytes <= dataset {
		t.Errorf("%d objects, %d bytes: want more than one pass over the 20 objects, %d bytes", s.Objects, s.Bytes, dataset)
	}
	// The steady figure is the median of the full intervals that began
	// after the 500 ms warm-up (the last, shorter one left out).
	ivs := lines["interval"]
	var rates []float64
	for _, l := range ivs[:len(ivs)-1] {
		if start := l["t_s"].(float64) - l["seconds"].(float64); start >= 0.5-1e-9 {
			rates = append(rates, l["bytes"].(float64)/l["seconds"].(float64))
		}
	}
	sort.Float64s(rates)
	if s.WarmupS != 0.5 || !s.SteadyReached || s.SteadyIntervals != len(rates) || len(rates) < 3 {
		t.Fatalf("warm-up %.3f s, steady %v over %d intervals; want 0.5 s and the %d intervals after it", s.WarmupS, s.SteadyReached, s.SteadyIntervals, len(rates))
	}
	want := rates[len(rates)/2]
	if len(rates)%2 == 0 {
		want = (rates[len(rates)/2-1] + rates[len(rates)/2]) / 2
	}
	if math.Abs(s.SteadyBPS-want) > 1e-6*want || s.SteadyP10 > s.SteadyBPS || s.SteadyP90 < s.SteadyBPS || s.SteadyP10 < rates[0] || s.SteadyP90 > rates[len(rates)-1] {
		t.Errorf("steady %.0f B/s (p10 %.0f, p90 %.0f), want the intervals' median %.0f within their range %.0f-%.0f", s.SteadyBPS, s.SteadyP10, s.SteadyP90, want, rates[0], rates[len(rates)-1])
	}
	if len(s.Classes) != 2 || s.Classes[0].Name != "d" || s.Classes[1].Name != "s" || s.Classes[0].Objects+s.Classes[1].Objects != s.Objects ||
		s.Classes[0].Bytes+s.Classes[1].Bytes != s.Bytes {
		t.Errorf("classes %+v, want d and s adding up to the summary's %d objects and %d bytes", s.Classes, s.Objects, s.Bytes)
	}
	if s.EmulatorCPU <= 0 || s.EmulatorPeakRSS <= 0 || s.Bottleneck == "work" {
		t.Errorf("summary %+v: want the emulator's CPU and memory, and no 'too little work' verdict", s)
	}

	// The text summary opens with the steady figure and calls the objects
	// cut at the end neither failed nor interrupted.
	r = run(t, nil, "bench", "--duration", "1s", "--dataset", "d:4:1MiB", "--ttfb", "2ms", "--conn-rate", "2MB", "--max-concurrent-requests", "8")
	if r.code != 0 || !regexp.MustCompile(`(?m)^throughput, steady: `).MatchString(r.stdout) || strings.Contains(r.stdout, "interrupted") || strings.Contains(r.stderr, "object failed") {
		t.Errorf("exit %d, want a steady line and no interruption or failure:\n%s\n%s", r.code, r.stdout, r.stderr)
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
