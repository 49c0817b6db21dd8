package report

import (
	"strings"
	"testing"
)

func rounds(field string, xs ...float64) []Round {
	var out []Round
	for _, x := range xs {
		out = append(out, Round{Figures: map[string]float64{field: x}})
	}
	return out
}

func TestCompareVerdicts(t *testing.T) {
	tests := []struct {
		name  string
		field string
		a, b  []float64
		want  string
	}{
		{"faster", "gbps", []float64{10, 10.2, 9.9, 10.1}, []float64{12, 12.1, 11.8, 12.2}, Better},
		{"slower", "gbps", []float64{10, 10.2, 9.9, 10.1}, []float64{8, 8.1, 7.9, 8.2}, Worse},
		{"noisy", "gbps", []float64{10, 14, 7, 11}, []float64{11, 8, 13, 10}, WithinNoise},
		{"two rounds", "gbps", []float64{10, 10}, []float64{20, 20, 20}, Unknown},
		{"lower latency is better", "ttfb_p99_ms", []float64{50, 51, 49}, []float64{30, 31, 29}, Better},
		{"more cpu is worse", "cpu_seconds_per_gib", []float64{1, 1.01, 0.99}, []float64{2, 2.01, 1.99}, Worse},
		{"identical", "gbps", []float64{5, 5, 5}, []float64{5, 5, 5}, WithinNoise},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := Compare(rounds(tt.field, tt.a...), rounds(tt.field, tt.b...))
			if len(cs) != 1 {
				t.Fatalf("%d changes, want 1", len(cs))
			}
			if cs[0].Verdict != tt.want {
				t.Errorf("verdict %q (A %.2f±%.2f, B %.2f±%.2f), want %q", cs[0].Verdict, cs[0].A, cs[0].SDA, cs[0].B, cs[0].SDB, tt.want)
			}
		})
	}
}

func TestReadRoundsTakesSummaryLines(t *testing.T) {
	in := `emulator: http://127.0.0.1:1, dataset d
{"type":"object","key":"a","bytes":5}
{"type":"interval","bytes":5,"gibps":1}
{"type":"summary","gibps":2.5,"requests":10,"verdict":"text","scheme":"https"}
{"type":"summary","gibps":3.5,"requests":12}
`
	rs, err := ReadRounds(strings.NewReader(in))
	if err != nil || len(rs) != 2 || rs[0].Figures["gibps"] != 2.5 || rs[1].Figures["requests"] != 12 || rs[0].Scheme != "https" || rs[1].Scheme != "" {
		t.Fatalf("ReadRounds: %v, %v; want two summaries, the first over https", rs, err)
	}
	if _, err := ReadRounds(strings.NewReader(`{"type":"object"}`)); err == nil {
		t.Error("output without a summary was accepted")
	}
	if _, err := ReadRounds(strings.NewReader("{not json\n")); err == nil {
		t.Error("a malformed line was accepted")
	}
}

// Runs over different schemes, or one that did not record its scheme,
// are warned about; runs over one scheme are not.
func TestSchemeWarning(t *testing.T) {
	over := func(schemes ...string) []Round {
		var out []Round
		for _, s := range schemes {
			out = append(out, Round{Scheme: s})
		}
		return out
	}
	for _, tt := range []struct {
		a, b []Round
		want string
	}{
		{over("https", "https"), over("https"), ""},
		{over("http"), over("http", "http"), ""},
		{over("http", "http"), over("https", "https"), "A ran over http and B over https"},
		{over(""), over("https"), "A ran over an unrecorded scheme and B over https"},
		{over("http", "https"), over("https"), "A ran over http and https and B over https"},
	} {
		got := SchemeWarning(tt.a, tt.b)
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("SchemeWarning(%v, %v) = %q, want %q", tt.a, tt.b, got, tt.want)
		}
	}
}

// TestCompareTakesTheSteadyFigure: bench compare judges the steady
// throughput first, from steady_bytes_per_second, and leaves out the
// rounds that reached none.
func TestCompareTakesTheSteadyFigure(t *testing.T) {
	in := func(steady ...float64) []Round {
		var rs []Round
		for _, x := range steady {
			rs = append(rs, Round{Figures: map[string]float64{"steady_bytes_per_second": x * (1 << 20), "bytes_per_second": 100 << 20}}.withRates())
		}
		return rs
	}
	cs := Compare(in(500, 505, 498), in(600, 602, 597, 0))
	if len(cs) == 0 || cs[0].Field != "steady_mib_per_s" {
		t.Fatalf("changes %+v, want the steady figure first", cs)
	}
	if c := cs[0]; c.Verdict != Better || c.NB != 3 || c.A < 500 || c.A > 505 {
		t.Errorf("steady figure: %+v, want better, over the 3 rounds of B that reached one, A near 501 MiB/s", c)
	}
	if cs[1].Field != "mib_per_s" || cs[1].Verdict != WithinNoise {
		t.Errorf("whole-run figure %+v, want mib_per_s within noise", cs[1])
	}
}
