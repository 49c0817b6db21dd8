package transfer

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// A trace is a real run's response to the window: `s3pd bench --sweep
// --json` over fixed windows (--adaptive off, one line per setting: the
// throughput, the median time to first byte and the mean in flight at
// that many requests). Each is replayed through the rule: a network
// model is fitted to it (the time to first byte and one request's rate
// at the least window, the plateau as the aggregate cap), the fit is
// checked against every recorded setting, and the adaptive window runs
// over the fitted model against its best fixed window: the grid's
// throughput target, and its requests in flight against the least window
// that serves 95 % of the best.
//
// The traces in testdata/traces, recorded on an idle 2-core machine with
// client and emulator sharing its cores, each with:
//
//	s3pd bench --sweep --sweep-parts 8MiB --sweep-requests 1,2,4,8,16,32,64,128,256 \
//	    --sweep-time 2s --json --quiet [MODEL]
//
// where MODEL is `--http --ttfb 0 --conn-rate 0` (emulator-http), `--ttfb 0
// --conn-rate 0` (emulator-https) or nothing (s3like: HTTPS, 30 ms to
// first byte, 90 MB/s per connection).
var traces = []struct {
	file string
	// fit is how far the fitted model may stray from a recorded
	// setting's throughput, either way; load is the most mean in flight
	// allowed over the least window within 95 % of the best fixed one
	// (kneeFloor at least: the rule steps no lower), with why it stands
	// above the grid's target where it does.
	fit, load float64
	why       string
}{
	{"emulator-http.jsonl", 0.35, simLoad, ""},
	{"emulator-https.jsonl", 0.55, simLoad,
		"fit: one TLS request and the emulator's TLS share the two cores, so the second request adds a quarter, not the model's straight line"},
	{"s3like.jsonl", 0.35, 1.7,
		"load: with 30 ms to first byte the climb steps blind to 256 before its first measure closes, then settles at 32; the mean counts the climb"},
}

// tracePoint is one setting of a recorded sweep.
type tracePoint struct {
	PartSize int64   `json:"part_size"`
	Requests int     `json:"max_concurrent_requests"`
	Bytes    int64   `json:"bytes"`
	Seconds  float64 `json:"seconds"`
	TTFBms   float64 `json:"ttfb_p50_ms"`
	InFlight float64 `json:"in_flight_mean"`
}

func (p tracePoint) rate() float64 { return float64(p.Bytes) / p.Seconds }

func readTrace(t *testing.T, name string) []tracePoint {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "traces", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ps []tracePoint
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var p tracePoint
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if p.Seconds > 0 && p.Requests > 0 {
			ps = append(ps, p)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(ps, func(a, b tracePoint) int { return a.Requests - b.Requests })
	if len(ps) < 4 {
		t.Fatalf("%s: %d settings, want at least 4", name, len(ps))
	}
	return ps
}

// fitTrace is the network model of a trace: at its least window, the
// time to first byte and what one request moved give the model's time to
// first byte and per-connection rate; above it, the client's cores
// (traceCores) cap the throughput, each byte costing CPU and each request
// in flight a share of a core (its connection polled, its buffers
// touched), fitted to the best setting and the widest one: where the
// widest moved less than the best, the requests in flight between them
// cost the difference.
func fitTrace(ps []tracePoint) netModel {
	p := ps[0]
	ttfb := time.Duration(p.TTFBms * float64(time.Millisecond))
	perReq := p.rate() / max(p.InFlight, 1)
	// One request's time is its first byte and its part at perConn.
	stream := float64(p.PartSize)/perReq - ttfb.Seconds()
	perConn := 50 * simGB // the part streamed in no measurable time
	if stream > 0 {
		perConn = min(perConn, float64(p.PartSize)/stream)
	}
	top := ps[0]
	for _, q := range ps {
		if q.rate() > top.rate() {
			top = q
		}
	}
	wide := ps[len(ps)-1]
	// cores = perByte x X + perConn x w, at the best setting and the
	// widest.
	slope := 0.0 // CPU per request in flight, in bytes a second it costs
	if wide.Requests > top.Requests && wide.rate() < top.rate() {
		slope = (top.rate() - wide.rate()) / (wide.InFlight - top.InFlight)
	}
	m := simNet(perConn, ttfb, 0.2, 100*simGB, 8*p.PartSize)
	m.part = p.PartSize
	m.cores = traceCores
	m.cpuPerByte = traceCores / (top.rate() + slope*top.InFlight)
	m.cpuPerConn = slope * m.cpuPerByte
	return sized(m, wide.Requests, 4)
}

// traceCores are the cores of the machine the traces were recorded on.
const traceCores = 2

// TestSimReplaysTraces: each recorded trace, fitted, within its fit of
// every recorded setting; the adaptive window over it within the
// throughput target of its best fixed window.
func TestSimReplaysTraces(t *testing.T) {
	for _, tr := range traces {
		ps := readTrace(t, tr.file)
		m := fitTrace(ps)
		budget := ps[len(ps)-1].Requests
		for _, p := range ps {
			got := m.run(p.Requests, 0, false).rate()
			if r := got / p.rate(); r < 1-tr.fit || r > 1+tr.fit {
				t.Errorf("%s: the fitted model moves %.0f MB/s at %d requests, the trace %.0f MB/s (%.2fx), want within %.0f %%",
					tr.file, got/simMB, p.Requests, p.rate()/simMB, r, 100*tr.fit)
			}
		}
		a := m.run(budget, 0, true)
		best, bestW, least := m.best(budget, 0.95)
		share := a.rate() / best.rate()
		t.Logf("%s: fitted %.0f MB/s per connection, %v to first byte, %.2f ns of CPU a byte, %.4f of a core per request in flight; adaptive %.3f of fixed %d, mean in flight %.1f (least at 95%%: %d), window %d (%s)",
			tr.file, m.perConn/simMB, m.ttfb, m.cpuPerByte*1e9, m.cpuPerConn, share, bestW, a.inFlight, least, a.window, a.stop)
		t.Logf("%s: windows %v", tr.file, a.windows)
		if tr.why != "" {
			t.Logf("%s: beside the targets: %s", tr.file, tr.why)
		}
		if load := a.inFlight / float64(max(least, kneeFloor)); load > tr.load {
			t.Errorf("%s: mean in flight %.1f, %.2fx the least window within 95 %% of the best (%d, at least kneeFloor), want at most %.2fx",
				tr.file, a.inFlight, load, least, tr.load)
		}
		if share < simShare {
			t.Errorf("%s: adaptive %.3f of the best fixed window %d, want at least %.2f (windows %v)", tr.file, share, bestW, simShare, a.windows)
		}
	}
}
