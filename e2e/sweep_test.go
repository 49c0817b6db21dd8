package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/s3pd/s3pd/pkg/s3emu"
)

// TestSweepSavesAPresetThatGetUses sweeps a small grid, saves the best
// setting as a preset, and checks that get --preset NAME runs with it.
func TestSweepSavesAPresetThatGetUses(t *testing.T) {
	home := t.TempDir()
	env := []string{"HOME=" + home}
	r := run(t, env, "bench", "--json", "--sweep", "--sweep-time", "400ms", "--sweep-parts", "1MiB,4MiB", "--sweep-requests", "2,8",
		"--dataset", "d:6:8MiB", "--ttfb", "2ms", "--conn-rate", "20MB", "--save-preset", "lab")
	if r.code != 0 {
		t.Fatalf("sweep: exit %d\n%s", r.code, r.stderr)
	}
	lines := jsonLines(t, r.stdout)
	if len(lines["sweep"]) != 4 || len(lines["sweep_best"]) != 1 {
		t.Fatalf("%d sweep lines and %d best, want 4 and 1\n%s", len(lines["sweep"]), len(lines["sweep_best"]), r.stdout)
	}
	best := lines["sweep_best"][0]
	top := 0.0
	for _, l := range lines["sweep"] {
		if l["bytes"].(float64) <= 0 {
			t.Errorf("setting %v moved nothing", l)
		}
		// Each setting runs with its window fixed (--adaptive off): the
		// mean in flight is measured, and never above the setting.
		if m, _ := l["in_flight_mean"].(float64); m <= 0 || m > l["max_concurrent_requests"].(float64) {
			t.Errorf("setting %v: in_flight_mean %v, want above 0 and at most the setting", l, l["in_flight_mean"])
		}
		top = max(top, l["gibps"].(float64))
	}
	if g := best["gibps"].(float64); g < 0.95*top {
		t.Errorf("best %.3f Gibps, want within 5%% of the top %.3f", g, top)
	}
	// It says how it chose: the fastest, or why not the fastest.
	reason, _ := best["reason"].(string)
	if g := best["gibps"].(float64); (g == top) != (reason == "the fastest row") || (g < top && !strings.Contains(reason, "within 5% of the fastest")) {
		t.Errorf("best %.3f Gibps of a top %.3f, reason %q", g, top, reason)
	}
	path := filepath.Join(home, ".config", "s3pd", "presets", "lab.yaml")
	if best["preset_file"] != path {
		t.Fatalf("preset saved at %v, want %s", best["preset_file"], path)
	}
	yaml, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	part := int64(best["part_size"].(float64))
	reqs := int(best["max_concurrent_requests"].(float64))

	// config show and get read the saved preset.
	r = run(t, env, "config", "show", "--json", "--preset", "lab")
	var shown struct {
		Settings []struct {
			Name, Source string
			Value        any
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &shown); err != nil {
		t.Fatalf("config show: %v\n%s%s", err, r.stdout, r.stderr)
	}
	for _, st := range shown.Settings {
		if st.Name == "multipart_chunksize" && (st.Source != "preset" || int64(st.Value.(float64)) != part) ||
			st.Name == "max_concurrent_requests" && (st.Source != "preset" || int(st.Value.(float64)) != reqs) {
			t.Errorf("config show --preset lab: %s = %v from %s, want %d/%d from the preset\n%s", st.Name, st.Value, st.Source, part, reqs, yaml)
		}
	}
	s := emuStore(t, s3emu.Options{Dataset: "o:2:8MiB"})
	r = run(t, env, s.cmd("get", "--json", "--benchmark", "--preset", "lab", s.url("o/"))...)
	if r.code != 0 {
		t.Fatalf("get --preset lab: exit %d\n%s", r.code, r.stderr)
	}
	var sum struct{ Requests, Hedged, Splits int64 }
	lastJSON(t, r.stdout, &sum)
	// A straggler taken over on a loaded machine asks again, and its rest
	// may go over idle slots in pieces: those are not the plan's parts.
	if want := 2 * (8 << 20) / part; sum.Requests-sum.Hedged-sum.Splits != want {
		t.Errorf("get --preset lab sent %d requests (%d takeovers, %d pieces), want %d parts (two 8 MiB objects in the preset's %d-byte parts)",
			sum.Requests, sum.Hedged, sum.Splits, want, part)
	}

	for _, args := range [][]string{
		{"bench", "--sweep", "--save-preset", "m5n.24xlarge"},
		{"bench", "--sweep", "--save-preset", "../x"},
		{"bench", "--save-preset", "x"},
		{"bench", "--sweep", "--sweep-parts", "1KiB"},
	} {
		if r := run(t, env, args...); r.code != 2 {
			t.Errorf("%v: exit %d, want 2\n%s", args, r.code, r.stderr)
		}
	}
	if r := run(t, env, "get", "--preset", "nothing-saved", "--benchmark", "s3://bucket/k"); r.code != 2 || !strings.Contains(r.stderr, "none saved in") {
		t.Errorf("an unknown preset: exit %d, want 2 and where it looked\n%s", r.code, r.stderr)
	}
}
