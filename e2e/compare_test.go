package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestBenchRepeatAndCompare saves two runs of five rounds, one paced
// ten times slower per connection, and compares them: the slower one is
// worse in throughput, and only --fail-on-regression makes that exit 1.
func TestBenchRepeatAndCompare(t *testing.T) {
	dir := t.TempDir()
	save := func(name, rate string, rounds string) string {
		r := run(t, nil, "bench", "--json", "--repeat", rounds, "--dataset", "d:4:8MiB", "--ttfb", "1ms", "--conn-rate", rate)
		if r.code != 0 {
			t.Fatalf("bench: exit %d\n%s", r.code, r.stderr)
		}
		if got := strings.Count(r.stdout, `"type":"summary"`); got != atoi(rounds) {
			t.Fatalf("%d summaries for --repeat %s, want one per round", got, rounds)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(r.stdout), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	fast, slow := save("fast.json", "40MB", "5"), save("slow.json", "4MB", "5")

	r := run(t, nil, "bench", "compare", fast, slow)
	if r.code != 0 {
		t.Fatalf("compare without --fail-on-regression: exit %d, want 0\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !regexp.MustCompile(`throughput \(Gbit/s\)\s.*-[0-9.]+%\s+worse`).MatchString(r.stdout) {
		t.Fatalf("compare does not find the slower run's throughput worse:\n%s", r.stdout)
	}
	if r = run(t, nil, "bench", "compare", "--fail-on-regression", fast, slow); r.code != 1 {
		t.Fatalf("--fail-on-regression with a worse B: exit %d, want 1\n%s", r.code, r.stdout)
	}
	// The faster run is better in throughput; a latency figure may still
	// come out worse on a busy machine (more bytes in flight per core), and
	// then --fail-on-regression rightly fails: the exit follows the verdicts.
	r = run(t, nil, "bench", "compare", "--fail-on-regression", slow, fast)
	if worse := regexp.MustCompile(`(?m)\sworse$`).MatchString(r.stdout); r.code != map[bool]int{false: 0, true: 1}[worse] ||
		!regexp.MustCompile(`throughput \(Gbit/s\)\s.*\+[0-9.]+%\s+better`).MatchString(r.stdout) {
		t.Fatalf("--fail-on-regression with a better B: exit %d, want better throughput and exit 1 only if a figure is worse\n%s", r.code, r.stdout)
	}
	short := save("short.json", "4MB", "2")
	if r = run(t, nil, "bench", "compare", "--fail-on-regression", fast, short); r.code != 0 || !strings.Contains(r.stdout, "unknown") || strings.Contains(r.stdout, "worse") {
		t.Fatalf("two rounds: exit %d, want 0 and unknown verdicts\n%s", r.code, r.stdout)
	}
	if r = run(t, nil, "bench", "compare", fast, filepath.Join(dir, "missing.json")); r.code != 2 {
		t.Fatalf("a missing file: exit %d, want 2", r.code)
	}
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}

// TestBenchCompareWithoutFigures: a side whose summaries carry none of
// the figures (a run that measured nothing) cannot show that B did not
// regress: --fail-on-regression exits 1 naming it; without the flag the
// comparison says so and exits 0.
func TestBenchCompareWithoutFigures(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var full strings.Builder
	for i := range 3 {
		full.WriteString(`{"schema":"s3pd/1","type":"summary","gibps":` + []string{"1.0", "1.1", "0.9"}[i] + `,"ttfb_p50_ms":2}` + "\n")
	}
	a := write("a.json", full.String())
	empty := write("empty.json", `{"schema":"s3pd/1","type":"summary","objects":"none"}`+"\n")
	for _, pair := range [][2]string{{a, empty}, {empty, a}} {
		r := run(t, nil, "bench", "compare", "--fail-on-regression", pair[0], pair[1])
		if r.code != 1 || !strings.Contains(r.stderr, "empty.json has no figures") {
			t.Errorf("--fail-on-regression %s %s: exit %d, want 1 naming empty.json\n%s%s", filepath.Base(pair[0]), filepath.Base(pair[1]), r.code, r.stdout, r.stderr)
		}
		if r = run(t, nil, "bench", "compare", pair[0], pair[1]); r.code != 0 || !strings.Contains(r.stdout, "has none of the figures") {
			t.Errorf("compare %s %s: exit %d, want 0 and a line saying so\n%s", filepath.Base(pair[0]), filepath.Base(pair[1]), r.code, r.stdout)
		}
	}
	if r := run(t, nil, "bench", "compare", "--fail-on-regression", a, a); r.code != 0 {
		t.Errorf("A against itself: exit %d, want 0\n%s%s", r.code, r.stdout, r.stderr)
	}
}
