// Command paired prints paired throughput ratios from bench/run.sh's
// raw.txt.
//
// bench/run.sh runs every contender once per round, so the n-th line of one
// contender and the n-th line of another come from the same round, when the
// machine ran at the same speed. For each benchmark and contender it prints
// its throughput over the base's (the base's time over its own) three ways:
// the ratio of the medians (what benchstat reports), the median of the
// per-round ratios, and their geometric mean with a 95 % bootstrap interval
// (4,000 resamples, fixed seed).
//
//	go run ./bench/paired OUT/raw.txt [base]     # base: bare
//
// Given several raw.txt files (runs of the same code), it also pools them:
// the ratios are paired within each run, and the bootstrap resamples the
// rounds of each run apart, so a long run does not stand for a short one's
// noise and no round is paired across runs.
//
//	go run ./bench/paired RUN1/raw.txt RUN2/raw.txt ... [base]
//
// A base "best:PREFIX" is, in each benchmark, the client named PREFIX...
// with the lowest geomean time over the rounds: the best of a grid of
// hand-tuned references, chosen once (`best:ref-` for BenchmarkBudget).
package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

var line = regexp.MustCompile(`^Benchmark\S+?/(\S+)/client=(\S+?)-\d+\s+\d+\s+(\d+) ns/op`)

// times is benchmark -> client -> ns/op per round, with the order in which
// benchmarks and clients first appeared (the order of the output).
type times struct {
	benches []string
	clients map[string][]string
	ns      map[string]map[string][]float64
}

func read(r io.Reader) (*times, error) {
	t := &times{clients: map[string][]string{}, ns: map[string]map[string][]float64{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := line.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		bench, client := m[1], m[2]
		ns, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			return nil, err
		}
		if t.ns[bench] == nil {
			t.ns[bench] = map[string][]float64{}
			t.benches = append(t.benches, bench)
		}
		if _, ok := t.ns[bench][client]; !ok {
			t.clients[bench] = append(t.clients[bench], client)
		}
		t.ns[bench][client] = append(t.ns[bench][client], ns)
	}
	return t, sc.Err()
}

// ratios is benchmark -> client -> the per-round ratios of the base's time
// to the client's (the client's throughput over the base's), in order.
type ratios struct {
	benches []string
	clients map[string][]string
	r       map[string]map[string][]float64
}

func paired(t *times, base string, stderr io.Writer) *ratios {
	out := &ratios{clients: map[string][]string{}, r: map[string]map[string][]float64{}}
	for _, bench := range t.benches {
		base := t.base(bench, base)
		b, ok := t.ns[bench][base]
		if !ok {
			fmt.Fprintf(stderr, "%s: no %s\n", bench, base)
			continue
		}
		out.benches = append(out.benches, bench)
		out.r[bench] = map[string][]float64{}
		for _, client := range t.clients[bench] {
			if client == base {
				continue
			}
			c := t.ns[bench][client]
			n := min(len(b), len(c))
			rs := make([]float64, n)
			for i := range n {
				rs[i] = b[i] / c[i]
			}
			out.clients[bench] = append(out.clients[bench], client)
			out.r[bench][client] = rs
		}
	}
	return out
}

// base resolves the base of one benchmark: "best:PREFIX" is the client
// whose name starts with PREFIX that has the lowest geomean time there
// over the rounds (the best of a grid of references); any other name is
// itself.
func (t *times) base(bench, base string) string {
	prefix, best := strings.CutPrefix(base, "best:")
	if !best {
		return base
	}
	pick, fastest := base, math.Inf(1)
	for _, c := range t.clients[bench] {
		if m := geomean(t.ns[bench][c]); strings.HasPrefix(c, prefix) && m < fastest {
			pick, fastest = c, m
		}
	}
	return pick
}

func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	n := len(s)
	if n == 0 {
		return math.NaN()
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func geomean(xs []float64) float64 {
	sum := 0.0
	for _, x := range xs {
		sum += math.Log(x)
	}
	return math.Exp(sum / float64(len(xs)))
}

// interval is the 95 % bootstrap interval of the geomean of the ratios of
// one or more runs, resampling each run's rounds apart.
func interval(rng *rand.Rand, perRun [][]float64) (lo, hi float64) {
	const resamples = 4000
	boot := make([]float64, resamples)
	var sample []float64
	for i := range boot {
		sample = sample[:0]
		for _, rs := range perRun {
			for range rs {
				sample = append(sample, rs[rng.IntN(len(rs))])
			}
		}
		boot[i] = geomean(sample)
	}
	slices.Sort(boot)
	return boot[100], boot[3899]
}

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "paired:", err)
		os.Exit(2)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	base := "bare"
	if len(args) > 1 && !strings.HasSuffix(args[len(args)-1], ".txt") {
		base, args = args[len(args)-1], args[:len(args)-1]
	}
	if len(args) == 0 {
		return fmt.Errorf("usage: go run ./bench/paired RAW.txt [RAW.txt ...] [base]")
	}
	rng := rand.New(rand.NewPCG(1, 1))
	var runs []*ratios
	for _, path := range args {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		t, err := read(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
		r := paired(t, base, stderr)
		runs = append(runs, r)
		if len(args) > 1 {
			fmt.Fprintf(stdout, "# %s\n", path)
		}
		for _, bench := range r.benches {
			bb := t.base(bench, base)
			b := t.ns[bench][bb]
			for _, client := range r.clients[bench] {
				rs := r.r[bench][client]
				lo, hi := interval(rng, [][]float64{rs})
				fmt.Fprintf(stdout, "%s %s against %s, n=%d: medians %.3f, paired median %.3f, paired geomean %.3f [%.3f, %.3f]\n",
					bench, client, bb, len(rs), median(b)/median(t.ns[bench][client]), median(rs), geomean(rs), lo, hi)
			}
		}
	}
	if len(runs) < 2 {
		return nil
	}
	fmt.Fprintf(stdout, "# pooled over %d runs\n", len(runs))
	var benches []string
	clients := map[string][]string{}
	pooled := map[string]map[string][][]float64{} // benchmark -> client -> one list of ratios per run
	for _, r := range runs {
		for _, bench := range r.benches {
			if pooled[bench] == nil {
				pooled[bench] = map[string][][]float64{}
				benches = append(benches, bench)
			}
			for _, client := range r.clients[bench] {
				if _, ok := pooled[bench][client]; !ok {
					clients[bench] = append(clients[bench], client)
				}
				pooled[bench][client] = append(pooled[bench][client], r.r[bench][client])
			}
		}
	}
	for _, bench := range benches {
		for _, client := range clients[bench] {
			perRun := pooled[bench][client]
			every := slices.Concat(perRun...)
			lo, hi := interval(rng, perRun)
			fmt.Fprintf(stdout, "%s %s against %s, %d runs, n=%d: paired median %.3f, paired geomean %.3f [%.3f, %.3f]\n",
				bench, client, base, len(perRun), len(every), median(every), geomean(every), lo, hi)
		}
	}
	return nil
}
