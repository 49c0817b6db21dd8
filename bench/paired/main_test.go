package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPairedRatiosAndPooling(t *testing.T) {
	dir := t.TempDir()
	raw := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// Rounds: bare 1000, 1200, 900 ns; engine 1100, 1250, 1000 ns: the
	// ratios are 0.909, 0.96, 0.9.
	one := raw("one.txt", `goos: linux
BenchmarkGet/set=a/client=bare-2   1   1000 ns/op
BenchmarkGet/set=a/client=engine-2   1   1100 ns/op
BenchmarkGet/set=a/client=bare-2   1   1200 ns/op
BenchmarkGet/set=a/client=engine-2   1   1250 ns/op
BenchmarkGet/set=a/client=bare-2   1   900 ns/op
BenchmarkGet/set=a/client=engine-2   1   1000 ns/op
PASS
`)
	two := raw("two.txt", `BenchmarkGet/set=a/client=bare-2   1   2000 ns/op
BenchmarkGet/set=a/client=engine-2   1   1000 ns/op
`)
	var out, errOut bytes.Buffer
	if err := run([]string{one, two}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := []string{
		"# " + one,
		"set=a engine against bare, n=3: medians 0.909, paired median 0.909, paired geomean 0.923 [",
		"# " + two,
		"set=a engine against bare, n=1: medians 2.000, paired median 2.000, paired geomean 2.000 [2.000, 2.000]",
		"# pooled over 2 runs",
		"set=a engine against bare, 2 runs, n=4: paired median 0.935, paired geomean 1.120 [",
	}
	if len(lines) != len(want) {
		t.Fatalf("got %d lines, want %d:\n%s", len(lines), len(want), out.String())
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d: got %q, want it to start with %q", i, lines[i], w)
		}
	}

	out.Reset()
	if err := run([]string{one, "engine"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "set=a bare against engine, n=3: medians 1.100,") {
		t.Errorf("with base engine: got %q", out.String())
	}
	if err := run(nil, &out, &errOut); err == nil {
		t.Error("no files: got no error")
	}
}

// "best:ref-" pairs each benchmark against its fastest reference by
// median, which may differ from benchmark to benchmark.
func TestPairedBestOfGrid(t *testing.T) {
	p := filepath.Join(t.TempDir(), "raw.txt")
	text := `BenchmarkBudget/case=a/client=s3pd-2   1   1100 ns/op
BenchmarkBudget/case=a/client=ref-c16-2   1   2000 ns/op
BenchmarkBudget/case=a/client=ref-c32-2   1   1000 ns/op
BenchmarkBudget/case=b/client=s3pd-2   1   900 ns/op
BenchmarkBudget/case=b/client=ref-c16-2   1   1800 ns/op
BenchmarkBudget/case=b/client=ref-c32-2   1   2000 ns/op
`
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if err := run([]string{p, "best:ref-"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{
		"case=a s3pd against ref-c32, n=1: medians 0.909,",
		"case=a ref-c16 against ref-c32, n=1: medians 0.500,",
		"case=b s3pd against ref-c16, n=1: medians 2.000,",
	} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("output lacks %q:\n%s", w, out.String())
		}
	}
}
