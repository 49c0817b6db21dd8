package report

import (
	"fmt"
	"html/template"
	"io"
	"strings"
	"time"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// page is what the template reads.
type page struct {
	Run      Run
	Verdict  Verdict
	Stats    Stats
	Totals   [][2]string
	Machine  [][2]string
	Charts   []template.HTML
	Lanes    []laneRow
	Percents []percentRow
}

type laneRow struct {
	Name  string
	Bytes int64
	Rate  string
	Share string
}

type percentRow struct {
	Name                          string
	P50, P90, P99, P999, Requests string
}

// objectsText is the summary's verdicts and what was listed: "2
// transferred, 0 skipped, 1 failed; 3 listed".
func objectsText(s transfer.Summary) string {
	t := fmt.Sprintf("%d transferred, %d skipped, %d failed; %d listed", s.Objects, s.Skipped, s.Failed, s.Listed)
	if s.Excluded > 0 {
		t += fmt.Sprintf(", %d excluded", s.Excluded)
	}
	return t
}

// WriteHTML renders r as one self-contained HTML page.
func WriteHTML(w io.Writer, r Run) error {
	p := page{Run: r, Verdict: Diagnose(r), Stats: StatsOf(r.Samples)}
	s := r.Summary
	p.Totals = [][2]string{
		{"steady throughput", steadyText(r)},
		{"status", r.Status},
		{"objects", objectsText(s)},
		{"bytes", fmt.Sprintf("%d (%.3f GiB)", s.Bytes, float64(s.Bytes)/gib)},
		{"time", fmt.Sprintf("%.3f s", s.Elapsed.Seconds())},
		{"throughput", RateOfGibps(Gibps(s.Bytes, s.Elapsed))},
		{"requests", fmt.Sprintf("%d, %d retries, %d SlowDowns", s.Requests, s.Retries, s.SlowDowns)},
		{"ranges", rangesText(s)},
		{"requests in flight", fmt.Sprintf("mean %.1f, peak %d, bound %d", p.Stats.InFlightMean, p.Stats.InFlightPeak, r.MaxRequests)},
		{"window", windowText(s)},
		{"CPU", cpuText(r)},
		{"transport", transportText(r)},
		{"peak memory", fmt.Sprintf("%.1f MiB", float64(r.PeakRSSKiB)/1024)},
	}
	if r.Server != nil {
		p.Totals = append(p.Totals, [2]string{"emulator", fmt.Sprintf("its own process: %.2f CPU-seconds (%.1f cores), peak memory %.1f MiB",
			r.Server.CPU.Seconds(), r.Server.CPU.Seconds()/max(s.Elapsed.Seconds(), 1e-9), float64(r.Server.PeakRSSKiB)/1024)})
	}
	if f := r.Fleet; f != nil {
		p.Totals = append(p.Totals, [2]string{"fleet", fleetText(*f)})
	}
	for _, c := range r.Classes {
		name := "class " + c.Name
		if c.Size > 0 {
			name += fmt.Sprintf(" (%s)", smallBytesOrMiB(c.Size))
		}
		secs := s.Elapsed.Seconds()
		p.Totals = append(p.Totals, [2]string{name, fmt.Sprintf("%d objects, %s, %.1f objects/s; first byte p50 %s, p90 %s, p99 %s",
			c.Objects, Rate(float64(c.Bytes)/max(secs, 1e-9)), float64(c.Objects)/max(secs, 1e-9), round(c.TTFB50), round(c.TTFB90), round(c.TTFB99))})
	}
	if p.Stats.Intervals > 1 {
		p.Totals = append(p.Totals, [2]string{"throughput per interval",
			fmt.Sprintf("min %s, median %s, max %s over %d intervals of %s", RateOfGibps(p.Stats.MinGibps), RateOfGibps(p.Stats.MedianGibps), RateOfGibps(p.Stats.MaxGibps), p.Stats.Intervals, p.Stats.Every)})
	}
	m := r.Machine
	p.Machine = [][2]string{
		{"s3pd", r.Version},
		{"host", m.Hostname},
		{"CPUs", fmt.Sprint(m.CPUs)},
		{"system", fmt.Sprintf("%s/%s, kernel %s", m.OS, m.Arch, m.Kernel)},
	}
	for _, n := range m.NICs {
		speed := "speed unknown"
		if n.SpeedMbps > 0 {
			speed = fmt.Sprintf("%d Mbps", n.SpeedMbps)
		}
		if n.Used {
			speed += ", used"
		}
		p.Machine = append(p.Machine, [2]string{"NIC " + n.Name, speed})
	}
	for _, h := range []struct {
		name string
		h    transfer.Histogram
	}{{"time to first byte", s.TTFB}, {"request time", s.Request}} {
		p.Percents = append(p.Percents, percentRow{Name: h.name, Requests: fmt.Sprint(h.h.Total()),
			P50: q(h.h, 0.5), P90: q(h.h, 0.9), P99: q(h.h, 0.99), P999: q(h.h, 0.999)})
	}
	for _, l := range s.Lanes {
		row := laneRow{Name: l.Name, Bytes: l.Bytes, Rate: RateOfGibps(Gibps(l.Bytes, s.Elapsed))}
		if s.Bytes > 0 {
			row.Share = fmt.Sprintf("%.1f%%", 100*float64(l.Bytes)/float64(s.Bytes))
		}
		p.Lanes = append(p.Lanes, row)
	}
	p.Charts = charts(r)
	return pageTemplate.Execute(w, p)
}

func q(h transfer.Histogram, x float64) string {
	if h.Total() == 0 {
		return "-"
	}
	return round(h.Quantile(x)).String()
}

// steadyText is the steady figure with its spread and warm-up, or why
// there is none.
func steadyText(r Run) string {
	st := r.Steady()
	if !st.OK {
		return fmt.Sprintf("not reached: %d intervals after a warm-up of %s (want %d); the whole run is below", st.Intervals, round(min(st.Warmup, r.Summary.Elapsed)), MinSteady)
	}
	return fmt.Sprintf("%s (p10 %s, p90 %s) over %d intervals after a warm-up of %s", Rate(st.Median), Rate(st.P10), Rate(st.P90), st.Intervals, round(st.Warmup))
}

// smallBytesOrMiB writes a size: "64.0 KiB", "1.00 MiB", "256 MiB".
func smallBytesOrMiB(n int64) string {
	if n < 1<<20 {
		return smallBytes(float64(n))
	}
	return digits(float64(n)/(1<<20)) + " MiB"
}

func cpuText(r Run) string {
	if r.CPU <= 0 {
		return "not measured"
	}
	t := fmt.Sprintf("%.2f s", r.CPU.Seconds())
	if r.Summary.Bytes > 0 {
		t += fmt.Sprintf(", %.2f s per GiB", r.CPU.Seconds()/(float64(r.Summary.Bytes)/gib))
	}
	if r.ServerInProcess {
		t += " (the embedded emulator's included)"
	}
	if r.Server != nil {
		t += " (the client's alone)"
	}
	return t
}

func transportText(r Run) string {
	t := r.Transport
	if t == "" {
		t = "not recorded"
	}
	if r.TLS.Handshakes > 0 {
		t += fmt.Sprintf("; %d TLS handshakes (%d resumed), %s, %.1f%% of the request time",
			r.TLS.Handshakes, r.TLS.Resumed, round(r.TLS.Time), 100*r.TLS.Share(r.Summary.RequestTime))
	}
	return t
}

// charts draws the run's charts, in the page's order.
func charts(r Run) []template.HTML {
	ss := r.Samples
	gbps := make([]float64, len(ss))
	inflight := make([]float64, len(ss))
	retries := make([]float64, len(ss))
	slow := make([]float64, len(ss))
	wait := make([]float64, len(ss))
	for i, x := range ss {
		gbps[i] = Gbps(x.Bytes, x.Length)
		inflight[i] = float64(x.InFlight)
		retries[i] = float64(x.Retries - x.SlowDowns)
		slow[i] = float64(x.SlowDowns)
		if x.RequestTime > 0 {
			wait[i] = 100 * float64(x.WriteTime) / float64(x.RequestTime)
		}
	}
	var lanes []line
	for li, l := range r.Summary.Lanes {
		ys := make([]float64, len(ss))
		for i, x := range ss {
			if li < len(x.Lanes) {
				ys[i] = Gbps(x.Lanes[li], x.Length)
			}
		}
		lanes = append(lanes, line{name: l.Name, ys: ys})
	}
	marks := func(h transfer.Histogram) []mark {
		if h.Total() == 0 {
			return nil
		}
		return []mark{{"p50", h.Quantile(0.5)}, {"p90", h.Quantile(0.9)}, {"p99", h.Quantile(0.99)}, {"p99.9", h.Quantile(0.999)}}
	}
	out := []template.HTML{
		timeChart("chart-throughput", "Throughput over time", "Gbit/s", ss, []line{{name: "throughput", ys: gbps}}),
		timeChart("chart-inflight", "Requests in flight", "requests", ss, []line{{name: "in flight", ys: inflight}}),
		histogramChart("chart-ttfb", "Time to first byte", r.Summary.TTFB, marks(r.Summary.TTFB)),
		histogramChart("chart-request", "Request time (request sent to last byte written)", r.Summary.Request, marks(r.Summary.Request)),
	}
	if len(lanes) > 1 {
		// One lane's chart would repeat the throughput chart.
		out = append(out, timeChart("chart-lanes", "Throughput per NIC (lane)", "Gbit/s", ss, lanes))
	}
	return append(out,
		timeChart("chart-retries", "Retries and SlowDowns", "per interval", ss, []line{{name: "other retries", ys: retries, bars: true}, {name: "SlowDown", ys: slow, bars: true}}),
		timeChart("chart-writes", "Write wait: the share of the requests' time spent writing to the destination", "%", ss, []line{{name: "write wait", ys: wait}}))
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

var pageTemplate = template.Must(template.New("report").Funcs(template.FuncMap{"time": fmtTime}).Parse(pageHTML))

// pageHTML is the report's page. Its only script counts the charts and
// fills the contents line; the page is complete without it.
const pageHTML = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>s3pd {{.Run.Command}} report: {{.Run.Source}}</title>
<style>
body{font-family:"DejaVu Sans",Helvetica,Arial,sans-serif;margin:24px auto;max-width:920px;color:#111827;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:16px;margin:24px 0 8px;border-bottom:1px solid #e5e7eb;padding-bottom:4px}
.sub{color:#4b5563;font-size:13px}
.verdict{margin:16px 0;padding:12px 14px;border-left:6px solid #2563eb;background:#eff6ff;font-size:15px}
.verdict.bad{border-color:#dc2626;background:#fef2f2}
table{border-collapse:collapse;font-size:13px;margin:4px 0}td,th{padding:3px 10px 3px 0;text-align:left;vertical-align:top}
th{color:#374151;font-weight:600}td.num{text-align:right;font-variant-numeric:tabular-nums}
.grid2{display:grid;grid-template-columns:1fr 1fr;gap:0 24px}
svg.chart{width:100%;height:auto;display:block;margin:8px 0 16px}
svg .title{font-size:14px;font-weight:600;fill:#111827}svg .tick,svg .unit,svg .legend{font-size:11px;fill:#4b5563}
svg .title .unit{font-weight:400}
svg .grid{stroke:#e5e7eb;stroke-width:1}svg .mark{stroke-width:1.5;stroke-dasharray:4 3}svg .marklabel{font-size:11px;paint-order:stroke;stroke:#fff;stroke-width:3px}
svg .empty{font-size:13px;fill:#9ca3af}
footer{color:#6b7280;font-size:12px;margin-top:24px}
</style></head><body>
<h1>s3pd {{.Run.Command}} {{.Run.Source}}</h1>
<div class="sub">started {{time .Run.Started}}{{if .Run.Dest}}, into {{.Run.Dest}}{{end}} &middot; s3pd {{.Run.Version}}</div>
<div id="verdict" class="verdict{{if ne .Run.Status "ok"}} bad{{end}}" data-bottleneck="{{.Verdict.Bottleneck}}"><b>Verdict:</b> {{.Verdict.Line}}{{if .Run.Error}}<br><b>Run {{.Run.Status}}:</b> {{.Run.Error}}{{else if ne .Run.Status "ok"}}<br><b>Run {{.Run.Status}}.</b>{{end}}</div>
<div class="grid2">
<div><h2>Totals</h2><table id="totals">{{range .Totals}}<tr><th>{{index . 0}}</th><td>{{index . 1}}</td></tr>{{end}}</table></div>
<div><h2>Machine</h2><table id="machine">{{range .Machine}}<tr><th>{{index . 0}}</th><td>{{index . 1}}</td></tr>{{end}}</table></div>
</div>
<h2>Latency</h2>
<table id="percentiles"><tr><th></th><th>requests</th><th>p50</th><th>p90</th><th>p99</th><th>p99.9</th></tr>
{{range .Percents}}<tr><th>{{.Name}}</th><td class="num">{{.Requests}}</td><td class="num">{{.P50}}</td><td class="num">{{.P90}}</td><td class="num">{{.P99}}</td><td class="num">{{.P999}}</td></tr>{{end}}</table>
<h2>Charts</h2>
<p class="sub" id="contents">{{len .Charts}} charts</p>
{{range .Charts}}{{.}}
{{end}}
<h2>NICs (lanes)</h2>
<table id="lanes"><tr><th>lane</th><th>bytes</th><th>rate</th><th>share</th></tr>
{{range .Lanes}}<tr><th>{{.Name}}</th><td class="num">{{.Bytes}}</td><td class="num">{{.Rate}}</td><td class="num">{{.Share}}</td></tr>{{end}}</table>
<h2>Settings</h2>
<table id="settings"><tr><th>setting</th><th>value</th><th>origin</th></tr>
{{range .Run.Settings}}<tr><th>{{.Name}}</th><td>{{.Value}}</td><td>{{.Origin}}</td></tr>{{end}}</table>
<footer>Written by s3pd {{.Run.Version}}. This page is self-contained: it loads nothing from the network.</footer>
<script>
(function(){var c=document.querySelectorAll("svg.chart"),n=0;c.forEach(function(s){if(s.querySelector("polyline,rect.bar"))n++});
var p=document.getElementById("contents");p.textContent=c.length+" charts, "+n+" with data";p.dataset.drawn=String(n);})();
</script>
</body></html>
`

// rangesText says how the ranges were fetched: the GETs each took, the
// takeovers, the tail's pieces and the bytes received and not written.
func rangesText(s transfer.Summary) string {
	per := 0.0
	if s.Ranges > 0 {
		per = float64(s.Requests) / float64(s.Ranges)
	}
	return fmt.Sprintf("%d, %.3f GETs per range, %d hedged, %d tail pieces, %d bytes overfetched", s.Ranges, per, s.Hedged, s.Splits, s.Overfetch)
}

// windowText says where the window of requests in flight settled and
// why.
func windowText(s transfer.Summary) string {
	why := map[string]string{
		transfer.WindowBudget:   "at the budget",
		transfer.WindowKnee:     "at the knee: a step up bought no more throughput",
		transfer.WindowSlowDown: "set by the server's SlowDowns",
		transfer.WindowDemand:   "still climbing: the requests never filled it for long",
	}[s.WindowStop]
	if why == "" {
		return fmt.Sprint(s.Window)
	}
	return fmt.Sprintf("%d, %s", s.Window, why)
}

// fleetText is a fleet node's row: "node 1 of 3: 10.0 MiB from S3, 20.0
// MiB from peers, 20.0 MiB served to peers; bypassed: ...".
func fleetText(f Fleet) string {
	t := fmt.Sprintf("node %d of %d: %s from S3, %s from peers, %s served to peers",
		f.Node, f.Nodes, smallBytesOrMiB(f.FromSource), smallBytesOrMiB(f.FromPeers), smallBytesOrMiB(f.ToPeers))
	if len(f.Bypassed) > 0 {
		t += "; bypassed: " + strings.Join(f.Bypassed, "; ")
	}
	if f.Trusted > 0 {
		t += fmt.Sprintf("; %d objects taken from peers unchecked (--fleet-trust-peers)", f.Trusted)
	}
	return t
}
