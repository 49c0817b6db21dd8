package report

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
)

// Round is one summary line of `--json` output: its numeric fields and
// the scheme its requests used ("" in a summary saved before s3pd
// recorded it).
type Round struct {
	Figures map[string]float64
	Scheme  string
}

// ReadRounds reads the summary lines of a --json output (one per round of
// `bench --repeat N`), ignoring every other line type.
func ReadRounds(r io.Reader) ([]Round, error) {
	var rounds []Round
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if len(line) == 0 || line[0] != '{' {
			continue // the text a human run printed around the lines
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if m["type"] != "summary" {
			continue
		}
		round := Round{Figures: map[string]float64{}}
		round.Scheme, _ = m["scheme"].(string)
		for k, v := range m {
			if f, ok := v.(float64); ok {
				round.Figures[k] = f
			}
		}
		rounds = append(rounds, round.withRates())
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(rounds) == 0 {
		return nil, fmt.Errorf("no summary line: want the output of s3pd bench --json")
	}
	return rounds, nil
}

// withRates adds the throughput people read, in one pair of units
// (MiB/s and decimal Gbit/s), derived from bytes_per_second, or from
// gibps in the summaries of older versions.
func (r Round) withRates() Round {
	bps, ok := r.Figures["bytes_per_second"]
	if g, has := r.Figures["gibps"]; !ok && has {
		bps, ok = gibpsToBytes(g), true
	}
	if ok {
		r.Figures["mib_per_s"], r.Figures["gbps"] = bps/(1<<20), bps*8/1e9
	}
	// The steady figure, when the round reached one (a summary of an
	// older version, or a round all ramp, has none to compare).
	if st := r.Figures["steady_bytes_per_second"]; st > 0 {
		r.Figures["steady_mib_per_s"] = st / (1 << 20)
	}
	return r
}

// Figure is one compared figure of a summary and which way is better.
type Figure struct {
	Field, Name  string
	HigherBetter bool
}

// Figures are what Compare compares, in order.
var Figures = []Figure{
	{"steady_mib_per_s", "steady throughput (MiB/s)", true},
	{"mib_per_s", "throughput (MiB/s)", true},
	{"gbps", "throughput (Gbit/s)", true},
	{"ttfb_p50_ms", "time to first byte p50 (ms)", false},
	{"ttfb_p99_ms", "time to first byte p99 (ms)", false},
	{"request_p50_ms", "request time p50 (ms)", false},
	{"request_p99_ms", "request time p99 (ms)", false},
	{"cpu_seconds_per_gib", "CPU seconds per GiB", false},
	{"retries", "retries", false},
	{"peak_rss_kib", "peak memory (KiB)", false},
}

// Verdicts of a comparison.
const (
	Better      = "better"
	Worse       = "worse"
	WithinNoise = "within noise"
	Unknown     = "unknown" // fewer than MinRounds rounds on a side
)

// MinRounds is the fewest rounds per side that Compare judges.
const MinRounds = 3

// Change is the comparison of one figure between runs A and B.
type Change struct {
	Figure
	// A and B are the means over the rounds, SDA and SDB their standard
	// deviations, NA and NB the rounds that have the figure.
	A, B, SDA, SDB float64
	NA, NB         int
	// Percent is B's change from A, in percent of A (0 when A is 0).
	Percent float64
	Verdict string
}

// Compare compares every figure both runs have. A difference is a change
// when Welch's t-test finds it at the 95% level; with fewer than
// MinRounds rounds on a side there is no telling noise apart, and the
// verdict is Unknown.
func Compare(a, b []Round) []Change {
	var out []Change
	for _, f := range Figures {
		xa, xb := values(a, f.Field), values(b, f.Field)
		if len(xa) == 0 || len(xb) == 0 {
			continue
		}
		c := Change{Figure: f, NA: len(xa), NB: len(xb)}
		c.A, c.SDA = meanSD(xa)
		c.B, c.SDB = meanSD(xb)
		if c.A != 0 {
			c.Percent = 100 * (c.B - c.A) / math.Abs(c.A)
		}
		c.Verdict = verdict(c)
		out = append(out, c)
	}
	return out
}

func verdict(c Change) string {
	if c.NA < MinRounds || c.NB < MinRounds {
		return Unknown
	}
	diff := c.B - c.A
	va, vb := c.SDA*c.SDA/float64(c.NA), c.SDB*c.SDB/float64(c.NB)
	se := math.Sqrt(va + vb)
	significant := false
	switch {
	case se == 0:
		significant = diff != 0
	default:
		df := (va + vb) * (va + vb) / (va*va/float64(c.NA-1) + vb*vb/float64(c.NB-1))
		significant = math.Abs(diff)/se > tCritical(df)
	}
	if !significant {
		return WithinNoise
	}
	if (diff > 0) == c.HigherBetter {
		return Better
	}
	return Worse
}

// tCritical is Student's t at 97.5% (a two-sided 95% test) for df
// degrees of freedom, rounded down to the table's rows.
func tCritical(df float64) float64 {
	table := []float64{12.71, 4.30, 3.18, 2.78, 2.57, 2.45, 2.36, 2.31, 2.26, 2.23,
		2.20, 2.18, 2.16, 2.14, 2.13, 2.12, 2.11, 2.10, 2.09, 2.09}
	switch {
	case df < 1:
		return table[0]
	case df <= float64(len(table)):
		return table[int(df)-1]
	case df <= 30:
		return 2.04
	case df <= 60:
		return 2.00
	}
	return 1.96
}

func values(rounds []Round, field string) []float64 {
	var v []float64
	for _, r := range rounds {
		if x, ok := r.Figures[field]; ok {
			v = append(v, x)
		}
	}
	return v
}

func meanSD(x []float64) (mean, sd float64) {
	for _, v := range x {
		mean += v
	}
	mean /= float64(len(x))
	if len(x) < 2 {
		return mean, 0
	}
	var ss float64
	for _, v := range x {
		ss += (v - mean) * (v - mean)
	}
	return mean, math.Sqrt(ss / float64(len(x)-1))
}

// SchemeWarning says when runs a and b did not use one scheme (HTTP and
// HTTPS, say), whose figures then differ by TLS's cost as well as by
// what changed; "" when they agree. A round that did not record its
// scheme (saved by an older s3pd, whose embedded emulator served plain
// HTTP) counts as unknown.
func SchemeWarning(a, b []Round) string {
	sa, sb := schemesOf(a), schemesOf(b)
	if sa == sb {
		return ""
	}
	return fmt.Sprintf("A ran over %s and B over %s: the figures differ by TLS's cost too, not only by what changed (compare runs over one scheme; bench --http runs the emulator over plain HTTP)", sa, sb)
}

// schemesOf names the schemes of rounds: "https", "http", "http and
// https", or "an unrecorded scheme" for rounds that did not say.
func schemesOf(rounds []Round) string {
	seen := map[string]bool{}
	for _, r := range rounds {
		seen[r.Scheme] = true
	}
	var names []string
	for _, s := range []string{"http", "https"} {
		if seen[s] {
			names = append(names, s)
		}
	}
	if seen[""] || len(names) == 0 {
		names = append(names, "an unrecorded scheme")
	}
	return strings.Join(names, " and ")
}
