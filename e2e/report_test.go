package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/s3pd/s3pd/pkg/s3emu"
)

// jsonLines decodes every line of stdout by its "type".
func jsonLines(t *testing.T, stdout string) map[string][]map[string]any {
	t.Helper()
	out := map[string][]map[string]any{}
	sc := bufio.NewScanner(strings.NewReader(stdout))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q is not JSON: %v", sc.Text(), err)
		}
		typ, _ := m["type"].(string)
		out[typ] = append(out[typ], m)
	}
	return out
}

// TestBenchIntervalsAndPercentiles: --json carries one interval line per
// sampling interval, which add up to the summary, and the summary
// carries percentiles up to p99.9, CPU time and a verdict.
func TestBenchIntervalsAndPercentiles(t *testing.T) {
	r := run(t, nil, "bench", "--json", "--interval", "50ms", "--dataset", "big:3:24MiB", "--ttfb", "5ms", "--conn-rate", "20MB")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	// Every field is one docs/JSON.md lists, with the ones it says are
	// always there.
	lines := checkLines(t, jsonSpec(t), r.stdout)
	if len(lines["summary"]) != 1 || len(lines["interval"]) < 3 {
		t.Fatalf("%d summaries and %d interval lines, want 1 and at least 3 (8 MiB parts at 20 MB/s per connection take over 400 ms)\n%s", len(lines["summary"]), len(lines["interval"]), r.stdout)
	}
	sum := lines["summary"][0]
	var bytes, requests float64
	for _, l := range lines["interval"] {
		bytes += l["bytes"].(float64)
		requests += l["requests"].(float64)
	}
	if bytes != sum["bytes"].(float64) || requests != sum["requests"].(float64) {
		t.Errorf("intervals add up to %.0f bytes and %.0f requests, want the summary's %v and %v", bytes, requests, sum["bytes"], sum["requests"])
	}
	for _, k := range []string{"ttfb_p90_ms", "ttfb_p999_ms", "request_p50_ms", "request_p999_ms", "cpu_seconds", "cpu_seconds_per_gib", "in_flight_peak"} {
		if v, _ := sum[k].(float64); v <= 0 {
			t.Errorf("summary %s = %v, want > 0", k, sum[k])
		}
	}
	if p50, p999 := sum["request_p50_ms"].(float64), sum["request_p999_ms"].(float64); p999 < p50 || p50 < 5 {
		t.Errorf("request time p50 %v ms, p99.9 %v ms: want p50 >= 5 ms (the emulator's delay) and p99.9 >= p50", p50, p999)
	}
	if v, _ := sum["verdict"].(string); v == "" {
		t.Errorf("summary has no verdict: %v", sum)
	}

	// get prints interval lines only when --interval asks for them.
	s := emuStore(t, s3emu.Options{Dataset: "d:2:8MiB", ConnRate: 40 << 20})
	for _, tt := range []struct {
		args []string
		some bool
	}{{nil, false}, {[]string{"--interval", "50ms"}, true}} {
		r := run(t, nil, s.cmd("get", append(tt.args, "--json", "--benchmark", s.url("d/"))...)...)
		if n := len(jsonLines(t, r.stdout)["interval"]); r.code != 0 || (n > 0) != tt.some {
			t.Errorf("get --json %v: exit %d, %d interval lines, want some: %v", tt.args, r.code, n, tt.some)
		}
	}
}

// chromium finds a headless Chromium; under CI its absence fails the test.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	unavailable(t, "chromium is not installed (apt-get install chromium fonts-dejavu-core; .ci/run does)")
	return ""
}

// browse runs headless Chromium on a file with extra arguments.
func browse(t *testing.T, exe, file string, args ...string) string {
	t.Helper()
	args = append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		"--user-data-dir=" + t.TempDir(), "--virtual-time-budget=5000"}, args...)
	cmd := exec.Command(exe, append(args, "file://"+file)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("chromium %v: %v\n%s", args, err, stderr.String())
		}
	case <-time.After(90 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("chromium %v took over 90 s", args)
	}
	return stdout.String()
}

// networkRef matches anything in a page that would load from elsewhere.
var networkRef = regexp.MustCompile(`(?i)(\s(src|href|srcset|action|xlink:href)\s*=|url\(|@import|<link\b|<iframe\b|fetch\(|XMLHttpRequest)`)

// TestBenchReportInBrowser renders the HTML report in headless Chromium:
// after its script ran, the DOM holds every chart with data, and a
// TestBenchWindowSaysWhereItStopped: the summary says where the window
// of requests in flight settled and why: fixed at the budget with
// --adaptive off, and with the climb within the budget, for a reason
// docs/JSON.md names (the knee's rule itself is tested in pkg/transfer).
func TestBenchWindowSaysWhereItStopped(t *testing.T) {
	for _, tt := range []struct {
		args   []string
		stop   string // "" any documented reason
		window int    // 0: any within the budget
		budget int
	}{
		{[]string{"--adaptive", "off", "--max-concurrent-requests", "24"}, "budget", 24, 24},
		{[]string{"--max-concurrent-requests", "200"}, "", 0, 200},
	} {
		args := append([]string{"bench", "--json", "--dataset", "w:64:512KiB", "--ttfb", "2ms", "--conn-rate", "0"}, tt.args...)
		r := run(t, nil, args...)
		if r.code != 0 {
			t.Fatalf("%v: exit %d\n%s", tt.args, r.code, r.stderr)
		}
		lines := checkLines(t, jsonSpec(t), r.stdout) // window_stop among the documented values
		sum := lines["summary"][0]
		w, stop, knee := int(sum["window"].(float64)), sum["window_stop"].(string), int(sum["window_knee"].(float64))
		if tt.stop != "" && stop != tt.stop || tt.window != 0 && w != tt.window || w < 1 || w > tt.budget {
			t.Errorf("%v: window %d (%s), want %d (%s) within the budget %d", tt.args, w, stop, tt.window, tt.stop, tt.budget)
		}
		if (stop == "knee") != (knee > 0) || knee > tt.budget {
			t.Errorf("%v: window_knee %d with window_stop %q: want a knee within the budget exactly when it stopped there", tt.args, knee, stop)
		}
		// The transitions: none with the window fixed; from the start
		// otherwise, the last one where the window stopped.
		phases, _ := sum["window_phases"].([]any)
		var names []string
		for _, p := range phases {
			names = append(names, p.(map[string]any)["phase"].(string))
		}
		last := map[string][]string{"knee": {"hold", "probe"}, "slowdown": {"backoff"}}[stop]
		switch {
		case tt.args[0] == "--adaptive" && len(names) != 0:
			t.Errorf("%v: window_phases %v, want none with the window fixed", tt.args, names)
		case tt.args[0] != "--adaptive" && (len(names) == 0 || names[0] != "start"):
			t.Errorf("%v: window_phases %v, want them to begin at start", tt.args, names)
		case last != nil && !slices.Contains(last, names[len(names)-1]):
			t.Errorf("%v: window_phases %v with window_stop %q, want the last among %v", tt.args, names, stop, last)
		}
	}
}

// screenshot is a picture, not a blank page.
func TestBenchReportInBrowser(t *testing.T) {
	exe := chromium(t)
	dir := t.TempDir()
	page := filepath.Join(dir, "run.html")
	r := run(t, nil, "bench", "--report", page, "--interval", "100ms", "--dataset", "big:3:24MiB,small:50:64KiB", "--ttfb", "5ms", "--conn-rate", "40MB")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	if m := networkRef.Find(b); m != nil {
		t.Fatalf("the report refers to something outside itself: %q", m)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("%d files in the report's directory, want only the report (no temporary left)", len(entries))
	}

	dom := browse(t, exe, page, "--dump-dom")
	charts := regexp.MustCompile(`<svg class="chart" id="(chart-[a-z]+)" data-points="(\d+)"`).FindAllStringSubmatch(dom, -1)
	// One lane: no per-NIC chart, which would repeat the throughput chart.
	want := []string{"chart-throughput", "chart-inflight", "chart-ttfb", "chart-request", "chart-retries", "chart-writes"}
	if len(charts) != len(want) {
		t.Fatalf("%d charts in the DOM, want %d: %v", len(charts), len(want), charts)
	}
	for i, c := range charts {
		if c[1] != want[i] || c[2] == "0" {
			t.Errorf("chart %d is %s with %s points, want %s with data", i, c[1], c[2], want[i])
		}
	}
	// The page's script counts the charts with data once it ran.
	if !strings.Contains(dom, `data-drawn="6"`) || !strings.Contains(dom, "6 charts, 6 with data") {
		t.Errorf("the DOM after scripts ran does not count 6 charts with data:\n%s", grepLine(dom, "contents"))
	}
	checkLabelsApart(t, exe, page)
	for _, wantText := range []string{"Verdict:", "p99.9", "Throughput over time", `data-bottleneck="`} {
		if !strings.Contains(dom, wantText) {
			t.Errorf("the DOM lacks %q", wantText)
		}
	}

	shot := filepath.Join(dir, "shot.png")
	browse(t, exe, page, "--screenshot="+shot, "--window-size=1000,1400")
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	var white, blue, total int
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y += 2 {
		for x := bounds.Min.X; x < bounds.Max.X; x += 2 {
			r, g, b, _ := img.At(x, y).RGBA()
			r, g, b = r>>8, g>>8, b>>8
			total++
			if r > 245 && g > 245 && b > 245 {
				white++
			}
			// The charts' first colour, #2563eb.
			if r < 70 && g > 70 && g < 130 && b > 200 {
				blue++
			}
		}
	}
	if white == total || total-white < total/50 || blue < 100 {
		t.Fatalf("the screenshot looks blank: %d of %d pixels white, %d in the charts' blue", white, total, blue)
	}
}

// labelCheck, added to a copy of a report, measures every chart's text
// as Chromium lays it out and writes what runs into what on the body.
const labelCheck = `<script>
(function(){
  var bad=[];
  function hit(a,b){return a.x<b.x+b.width&&b.x<a.x+a.width&&a.y<b.y+b.height&&b.y<a.y+a.height}
  document.querySelectorAll("svg.chart").forEach(function(svg){
    var vb=svg.viewBox.baseVal;
    var texts=[].slice.call(svg.querySelectorAll("text"));
    texts.forEach(function(t,i){
      var a=t.getBBox();
      if(a.x<0||a.y<0||a.x+a.width>vb.width||a.y+a.height>vb.height)bad.push(svg.id+": '"+t.textContent+"' leaves the chart");
      texts.slice(i+1).forEach(function(u){
        if(hit(a,u.getBBox()))bad.push(svg.id+": '"+t.textContent+"' runs into '"+u.textContent+"'");
      });
    });
  });
  document.body.setAttribute("data-overlaps",String(bad.length));
  document.body.setAttribute("data-overlap-list",bad.join(" | "));
})();
</script>`

// checkLabelsApart lays a report out in Chromium and fails t if any two
// texts of a chart overlap (percentile labels, titles and their units,
// ticks, legends) or one leaves its chart.
func checkLabelsApart(t *testing.T, exe, page string) {
	t.Helper()
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	probe := filepath.Join(t.TempDir(), "probe.html")
	if err := os.WriteFile(probe, bytes.Replace(b, []byte("</body>"), []byte(labelCheck+"</body>"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := browse(t, exe, probe, "--dump-dom", "--window-size=1000,1400")
	m := regexp.MustCompile(`data-overlaps="(\d+)" data-overlap-list="([^"]*)"`).FindStringSubmatch(dom)
	switch {
	case m == nil:
		t.Errorf("the label check did not run:\n%s", grepLine(dom, "<body"))
	case m[1] != "0":
		t.Errorf("%s overlaps in the charts: %s", m[1], m[2])
	}
}

func grepLine(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}

// TestReportOfFailedAndInterruptedRuns: a run that fails, and one that
// is interrupted, still leave a report that says so; a report inside DEST
// is refused before any request.
func TestReportOfFailedAndInterruptedRuns(t *testing.T) {
	s := emuStore(t, s3emu.Options{Dataset: "big:1:48MiB", ConnRate: 3 << 20})
	dir := t.TempDir()

	failed := filepath.Join(dir, "failed.html")
	r := run(t, nil, s.cmd("get", "--report", failed, "s3://no-such-bucket/p/", filepath.Join(dir, "out"))...)
	if r.code == 0 {
		t.Fatalf("a get from a missing bucket exited 0\n%s", r.stdout)
	}
	if b, err := os.ReadFile(failed); err != nil || !strings.Contains(string(b), "Run failed:") {
		t.Fatalf("report of a failed run: %v\n%.300s", err, b)
	}

	inDest := filepath.Join(dir, "dest")
	r = run(t, nil, s.cmd("get", "--report", filepath.Join(inDest, "sub", "r.html"), s.url("big/"), inDest)...)
	if r.code != 2 || !strings.Contains(r.stderr, "inside DEST") {
		t.Fatalf("a report inside DEST: exit %d, want 2 and a reason\n%s", r.code, r.stderr)
	}
	if st := s.emu.Stats(); st.GetRequests != 0 {
		t.Fatalf("%d GET requests before the refusal, want none", st.GetRequests)
	}

	interrupted := filepath.Join(dir, "interrupted.html")
	cmd, stderr := startGet(t, s.cmd("get", "--report", interrupted, "--partsize", "1MiB", "--threads", "4", s.url("big/"), filepath.Join(dir, "slow"))...)
	waitForJournal(t, filepath.Join(dir, "slow"))
	cmd.Process.Signal(syscall.SIGINT)
	if err := cmd.Wait(); err == nil {
		t.Fatalf("an interrupted get exited 0\n%s", stderr)
	}
	b, err := os.ReadFile(interrupted)
	if err != nil || !strings.Contains(string(b), "Run interrupted") || !strings.Contains(string(b), `id="chart-throughput"`) {
		t.Fatalf("report of an interrupted run: %v\n%.300s", err, b)
	}
}

// TestReportSaysWhereItWrote: bench --report and get --report say the
// page's path once it is written; --quiet still says nothing.
func TestReportSaysWhereItWrote(t *testing.T) {
	dir := t.TempDir()
	page := filepath.Join(dir, "bench.html")
	r := run(t, nil, "bench", "--report", page, "--dataset", "d:2:1MiB", "--ttfb", "1ms")
	if r.code != 0 || !strings.Contains(r.stdout, "report: "+page+"\n") {
		t.Fatalf("bench --report: exit %d, stdout lacks %q\n%s%s", r.code, "report: "+page, r.stdout, r.stderr)
	}
	if _, err := os.Stat(page); err != nil {
		t.Fatalf("the report it names: %v", err)
	}
	s := emuStore(t, s3emu.Options{Dataset: "g:2:1MiB"})
	page = filepath.Join(dir, "get.html")
	r = run(t, nil, s.cmd("get", "--report", page, s.url("g/"), filepath.Join(dir, "out"))...)
	if r.code != 0 || !strings.Contains(r.stdout, "report: "+page+"\n") {
		t.Errorf("get --report: exit %d, stdout lacks %q\n%s%s", r.code, "report: "+page, r.stdout, r.stderr)
	}
	r = run(t, nil, s.cmd("get", "--quiet", "--report", filepath.Join(dir, "q.html"), s.url("g/"), filepath.Join(dir, "q"))...)
	if r.code != 0 || r.stdout != "" || r.stderr != "" {
		t.Errorf("get --quiet --report: exit %d, stdout %q, stderr %q; want nothing", r.code, r.stdout, r.stderr)
	}
}
