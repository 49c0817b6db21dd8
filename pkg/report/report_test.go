package report

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// hist is a histogram with n durations of d each.
func hist(d time.Duration, n int64) transfer.Histogram {
	h := transfer.Histogram{Counts: make([]int64, 256)}
	for i := range h.Counts {
		if h.Upper(i) >= d {
			h.Counts[i] = n
			break
		}
	}
	return h
}

// steady is a run of 10 s at 1 GiB/s with inflight requests in flight.
func steady(inflight int) Run {
	var ss []transfer.Sample
	for i := 1; i <= 10; i++ {
		ss = append(ss, transfer.Sample{At: time.Duration(i) * time.Second, Length: time.Second, Bytes: 1 << 30, Requests: 128, InFlight: inflight, Lanes: []int64{1 << 30}})
	}
	ss = append(ss, transfer.Sample{At: 10*time.Second + time.Millisecond, Length: time.Millisecond})
	return Run{
		Summary: transfer.Summary{Objects: 10, Bytes: 10 << 30, Requests: 1280, Elapsed: 10 * time.Second,
			TTFB: hist(30*time.Millisecond, 1280), Request: hist(100*time.Millisecond, 1280),
			RequestTime: 128 * time.Second, WriteTime: 10 * time.Second, Lanes: []transfer.LaneSummary{{Name: "eth0", Bytes: 10 << 30}}},
		Samples:     ss,
		Machine:     Machine{CPUs: 8, NICs: []NIC{{Name: "eth0", SpeedMbps: 100000, Used: true}}},
		CPU:         20 * time.Second,
		MaxRequests: 256,
	}
}

func TestDiagnoseNamesTheBottleneck(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Run)
		want   string
		words  []string
	}{
		{"nothing moved", func(r *Run) { r.Summary.Bytes = 0 }, BottleneckNone, nil},
		{"throttled", func(r *Run) { r.Summary.SlowDowns = 64 }, BottleneckThrottling, []string{"64 SlowDown", "5.0%"}},
		{"handshakes", func(r *Run) {
			r.TLS = TLS{Handshakes: 1280, Resumed: 10, Time: 7 * time.Second}
			r.CPU = 75 * time.Second // what the handshakes cost is named first
		}, BottleneckTLS, []string{"1280 handshakes (10 resumed), 5.5 ms each on average, took 5.5% of the request time", "resumed sessions"}},
		{"handshakes that resume already", func(r *Run) {
			r.TLS = TLS{Handshakes: 258, Resumed: 257, Time: 7 * time.Second}
		}, BottleneckTLS, []string{"258 handshakes (257 resumed), 27.1 ms each on average", "the sessions resume already"}},
		{"handshakes under the threshold", func(r *Run) { r.TLS = TLS{Handshakes: 256, Time: 6 * time.Second} }, BottleneckWork, nil},
		{"cores busy", func(r *Run) { r.CPU = 75 * time.Second }, BottleneckCPU, []string{"94%", "8 cores"}},
		{"line rate", func(r *Run) { r.Machine.NICs[0].SpeedMbps = 10000 }, BottleneckNetwork, []string{"8.59 Gbit/s", "86%", "10 Gbit/s"}},
		{"unknown link speed is no evidence", func(r *Run) { r.Machine.NICs[0].SpeedMbps = 0 }, BottleneckWork, nil},
		{"writes", func(r *Run) { r.Summary.WriteTime = 100 * time.Second }, BottleneckDisk, []string{"78%"}},
		{"bound full", func(r *Run) { r.MaxRequests = 128 }, BottleneckConcurrency, []string{"128.0 in flight", "max_concurrent_requests"}},
		{"bound full, latency", func(r *Run) {
			r.MaxRequests = 128
			r.Summary.TTFB = hist(80*time.Millisecond, 1280)
		}, BottleneckConcurrency, []string{"first byte", "larger parts"}},
		{"bound half empty", func(r *Run) {}, BottleneckWork, []string{"128.0 requests in flight on average of the 256"}},
		// The summary's mean, where the run has one, not the samples'.
		{"the summary's mean", func(r *Run) { r.Summary.InFlightMean = 103.5 }, BottleneckWork, []string{"103.5 requests in flight on average"}},
		{"window at its knee", func(r *Run) {
			r.Summary.Window, r.Summary.WindowStop, r.Summary.WindowKnee = 128, transfer.WindowKnee, 128
		}, BottleneckKnee, []string{"stopped at 128 of the 256", "bought no more throughput"}},
		{"the emulator took most of the cores", func(r *Run) {
			r.Server = &Process{CPU: 50 * time.Second} // 5 of 8 cores, the client 2
		}, BottleneckEmulator, []string{"emulator used 5.0 of 8 cores", "client 2.0", "floor"}},
		{"the client took most of the cores beside the emulator", func(r *Run) {
			r.CPU, r.Server = 50*time.Second, &Process{CPU: 20 * time.Second}
		}, BottleneckCPU, []string{"88%", "emulator's 2.0 cores"}},
		{"an idle emulator is no evidence", func(r *Run) { r.Server = &Process{CPU: time.Second} }, BottleneckWork, nil},
		{"all ramp: never too little work", func(r *Run) {
			for i := range r.Samples {
				r.Samples[i].Window = 16 << i // the window climbed to the end
			}
			r.Warmup = -1
		}, BottleneckRamp, []string{"no steady state", "--duration"}},
		{"a warm-up left out of the requests in flight", func(r *Run) {
			// 128 in flight over the first 5 s, 256 (the bound) after.
			for i := 5; i < 10; i++ {
				r.Samples[i].InFlight = 256
			}
			r.Warmup = 5 * time.Second
		}, BottleneckConcurrency, []string{"256.0 in flight"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := steady(128)
			tt.change(&r)
			v := Diagnose(r)
			if v.Bottleneck != tt.want {
				t.Fatalf("bottleneck %q (%s), want %q", v.Bottleneck, v.Line, tt.want)
			}
			for _, w := range tt.words {
				if !strings.Contains(v.Line, w) {
					t.Errorf("verdict %q lacks %q", v.Line, w)
				}
			}
		})
	}
}

func TestSeriesStaysBoundedAndKeepsTotals(t *testing.T) {
	var s Series
	const n = 3*maxSamples + 7
	for i := 1; i <= n; i++ {
		s.Add(transfer.Sample{At: time.Duration(i) * time.Second, Length: time.Second, Bytes: int64(i), Requests: 1, InFlight: i % 5, Lanes: []int64{int64(i), 1}})
	}
	got := s.Samples()
	if len(got) > maxSamples || len(got) < maxSamples/2 {
		t.Fatalf("%d samples kept of %d, want at most %d and at least half as many", len(got), n, maxSamples)
	}
	var bytes, reqs, lane int64
	for i, x := range got {
		bytes += x.Bytes
		reqs += x.Requests
		lane += x.Lanes[0]
		if i > 0 && x.At-x.Length != got[i-1].At {
			t.Fatalf("sample %d starts at %s, want %s", i, x.At-x.Length, got[i-1].At)
		}
	}
	if want := int64(n * (n + 1) / 2); bytes != want || lane != want || reqs != n {
		t.Errorf("merged samples hold %d bytes, %d on lane 0, %d requests; want %d, %d, %d", bytes, lane, reqs, want, want, n)
	}
	if got[len(got)-1].At != n*time.Second {
		t.Errorf("last sample ends at %s, want %s", got[len(got)-1].At, n*time.Second)
	}
}

func TestStatsLeaveOutTheLastShortInterval(t *testing.T) {
	st := StatsOf(steady(100).Samples)
	if st.Intervals != 11 || st.Every != time.Second || st.InFlightPeak != 100 || st.InFlightMean != 100 {
		t.Fatalf("stats %+v, want 11 intervals of 1s, 100 in flight", st)
	}
	if st.MinGibps < 7.99 || st.MaxGibps > 8.01 {
		t.Errorf("interval throughput %.3f..%.3f Gibps, want 8 (the short last interval left out)", st.MinGibps, st.MaxGibps)
	}
}

func TestHTMLIsSelfContainedAndEscaped(t *testing.T) {
	r := steady(128)
	r.Command, r.Source, r.Status = "get", "s3://b/<script>alert(1)</script>", StatusOK
	r.Transport, r.TLS = "HTTPS (self-signed, in-process)", TLS{Handshakes: 64, Resumed: 48, Time: 96 * time.Millisecond}
	r.Summary.Window, r.Summary.WindowStop, r.Summary.WindowKnee = 64, transfer.WindowKnee, 64
	r.Settings = []Setting{{Name: "endpoint_url", Value: `http://x/"><b>bold</b>`, Origin: "flag (--endpoint-url)"}}
	var b bytes.Buffer
	if err := WriteHTML(&b, r); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if m := regexp.MustCompile(`(?i)(\s(src|href)\s*=|url\(|@import|<link\b)`).FindString(page); m != "" {
		t.Errorf("the page refers outside itself: %q", m)
	}
	if strings.Contains(page, "<script>alert") || strings.Contains(page, `<b>bold`) {
		t.Errorf("the page does not escape what it shows")
	}
	for _, want := range []string{`id="chart-throughput"`, `id="chart-ttfb"`, `id="chart-request"`, `id="chart-retries"`, "p99.9", "<polyline", "Verdict:", "64, at the knee",
		"HTTPS (self-signed, in-process); 64 TLS handshakes (48 resumed), 96ms, 0.1% of the request time"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

// TestLanesChartOnlyForSeveralLanes: the per-NIC chart is drawn when
// there are lanes to tell apart; one lane's would repeat the throughput
// chart.
func TestLanesChartOnlyForSeveralLanes(t *testing.T) {
	for _, lanes := range []int{1, 2} {
		r := steady(128)
		r.Summary.Lanes = nil
		for i := range lanes {
			r.Summary.Lanes = append(r.Summary.Lanes, transfer.LaneSummary{Name: fmt.Sprintf("eth%d", i), Bytes: 10 << 30 / int64(lanes)})
		}
		for i := range r.Samples {
			r.Samples[i].Lanes = make([]int64, lanes)
		}
		var b bytes.Buffer
		if err := WriteHTML(&b, r); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(b.String(), `id="chart-lanes"`); got != (lanes > 1) {
			t.Errorf("%d lanes: a per-NIC chart %v, want %v", lanes, got, lanes > 1)
		}
	}
}

// TestPercentileLabelsApart: the percentile labels of a histogram, even
// of marks that fall together, take places clear of each other, inside
// the plot.
func TestPercentileLabelsApart(t *testing.T) {
	for _, xs := range [][]float64{
		{500, 520, 860, 860}, // the user's: p99 and p99.9 at the right edge
		{100, 100, 100, 100}, // all in one bar
		{70, 855, 857, 859},  // at both edges
		{300, 340, 380, 420}, // a bar apart each
	} {
		var placed []labelBox
		for _, x := range xs {
			b := placeLabel(x, labelWidth("p99.9 262.1ms"), xs, placed)
			if b.x0 < padL || b.x1 > padL+plotW {
				t.Errorf("marks %v: a label at %.0f-%.0f leaves the plot", xs, b.x0, b.x1)
			}
			if !labelClear(b, nil, placed) {
				t.Errorf("marks %v: the label of the mark at %.0f (%.0f-%.0f, row %d) runs into another", xs, x, b.x0, b.x1, b.row)
			}
			if padT+10+b.row*percentileLabelSpacing > padT+plotH {
				t.Errorf("marks %v: a label in row %d, below the plot", xs, b.row)
			}
			placed = append(placed, b)
		}
	}
}

func TestWriteFileLeavesOnlyTheReport(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "r.html")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, steady(1)); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || !strings.HasPrefix(string(b), "<!DOCTYPE html>") {
		t.Fatalf("%d entries, report starts %.20q: want the report alone", len(entries), b)
	}
	if err := WriteFile(filepath.Join(dir, "missing", "r.html"), steady(1)); err == nil {
		t.Fatal("a report in a missing directory was written")
	}
}

// The write wait chart plots, per interval, the share of the requests'
// time that went into writing: its axis reaches the worst interval's.
func TestWriteWaitOverTime(t *testing.T) {
	r := steady(128)
	for i := range r.Samples {
		r.Samples[i].RequestTime = 10 * time.Second
		r.Samples[i].WriteTime = time.Second // 10%
	}
	r.Samples[4].WriteTime = 6 * time.Second // 60% in the fifth second
	var b bytes.Buffer
	if err := WriteHTML(&b, r); err != nil {
		t.Fatal(err)
	}
	chart := regexp.MustCompile(`(?s)<svg class="chart" id="chart-writes".*?</svg>`).FindString(b.String())
	if chart == "" {
		t.Fatal("no write wait chart")
	}
	// Axis 0 to 60 in quarters; the line goes through 10% and 60%.
	for _, want := range []string{">60.0</text>", ">15.0</text>", "write wait"} {
		if !strings.Contains(chart, want) {
			t.Errorf("the write wait chart lacks %q:\n%s", want, chart)
		}
	}
	merged := merge(r.Samples[3], r.Samples[4])
	if merged.RequestTime != 20*time.Second || merged.WriteTime != 7*time.Second {
		t.Errorf("merged samples: request %v, write %v; want 20s and 7s", merged.RequestTime, merged.WriteTime)
	}
}

// TestHTMLShowsHowRangesWereFetched: the totals say the ranges fetched,
// the GETs per range, the takeovers, the tail's pieces and the bytes
// received and not written.
func TestHTMLShowsHowRangesWereFetched(t *testing.T) {
	r := steady(128)
	r.Summary.Requests, r.Summary.Ranges, r.Summary.Hedged, r.Summary.Splits, r.Summary.Overfetch = 1290, 1280, 10, 40, 4096
	var b bytes.Buffer
	if err := WriteHTML(&b, r); err != nil {
		t.Fatal(err)
	}
	if want := "1280, 1.008 GETs per range, 10 hedged, 40 tail pieces, 4096 bytes overfetched"; !strings.Contains(b.String(), want) {
		t.Errorf("page lacks %q", want)
	}
}

// The page counts the objects as the summary does: the verdicts and what
// was listed.
func TestHTMLShowsWhatWasListed(t *testing.T) {
	r := steady(16)
	r.Summary.Objects, r.Summary.Skipped, r.Summary.Failed, r.Summary.Listed, r.Summary.Excluded = 5, 2, 1, 10, 2
	var b bytes.Buffer
	if err := WriteHTML(&b, r); err != nil {
		t.Fatal(err)
	}
	if want := "5 transferred, 2 skipped, 1 failed; 10 listed, 2 excluded"; !strings.Contains(b.String(), want) {
		t.Errorf("page lacks %q", want)
	}
}

// A fleet node's page says where its bytes came from and went, and which
// peers it bypassed; a run without a fleet has no such row.
func TestHTMLShowsAFleetNode(t *testing.T) {
	r := steady(16)
	var plain bytes.Buffer
	if err := WriteHTML(&plain, r); err != nil {
		t.Fatal(err)
	}
	r.Fleet = &Fleet{Node: 1, Nodes: 3, FromSource: 10 << 20, FromPeers: 20 << 20, ToPeers: 5 << 20, Bypassed: []string{"node 2 (10.0.0.3:7373): refused <the token>"}}
	var b bytes.Buffer
	if err := WriteHTML(&b, r); err != nil {
		t.Fatal(err)
	}
	want := "node 1 of 3: 10.0 MiB from S3, 20.0 MiB from peers, 5.00 MiB served to peers; bypassed: node 2 (10.0.0.3:7373): refused &lt;the token&gt;"
	if !strings.Contains(b.String(), want) {
		t.Errorf("page lacks %q", want)
	}
	if strings.Contains(b.String(), "unchecked") {
		t.Errorf("a fleet that trusted no object says it took some unchecked")
	}
	r.Fleet.Trusted = 4
	b.Reset()
	if err := WriteHTML(&b, r); err != nil {
		t.Fatal(err)
	}
	if want := want + "; 4 objects taken from peers unchecked (--fleet-trust-peers)"; !strings.Contains(b.String(), want) {
		t.Errorf("page lacks %q", want)
	}
	if strings.Contains(plain.String(), "served to peers") {
		t.Errorf("a run without a fleet has a fleet row")
	}
}
