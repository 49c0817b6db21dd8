package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/s3pd/s3pd/pkg/s3emu"
)

// BenchmarkBudget measures how s3pd spends its request budget under the
// S3-like model (30 ms before each response, 12.5 MB/s per connection),
// with --benchmark and no tuning flags, against a hand-tuned reference of
// the same binary in the same rounds: one large object, a skewed set, an
// AWS CLI concurrency setting, stalled GETs (the emulator's, and a
// proxy's that stalls connections mid-body), and servers that throttle.
// With $S3PD_OLD_BIN it also runs the fault-free sets with that binary.
// $S3PD_BENCH_QUICK=1 scales the slow cases down (see budgetCases).
//
// It starts its emulators (one per dataset and model) unless
// $S3PD_BENCH_SERVERS names them: run.sh starts them once for all rounds
// (S3PD_BENCH_ROLE=budget-servers), since preparing a GiB of ETags takes
// seconds.
func BenchmarkBudget(b *testing.B) {
	fmt.Printf("# budget round %d load %s\n", round(), loadAvg())
	running := map[string]string{}
	if js := os.Getenv("S3PD_BENCH_SERVERS"); js != "" {
		if err := json.Unmarshal([]byte(js), &running); err != nil {
			b.Fatalf("S3PD_BENCH_SERVERS: %v", err)
		}
	}
	cases, note := budgetCases()
	if note != "" {
		b.Log(note)
	}
	for _, bc := range cases {
		b.Run("case="+bc.name, func(b *testing.B) {
			eps := map[string]string{}
			for _, e := range bc.entrants {
				id := serverID(bc.spec, e.server)
				if ep, ok := running[id]; ok {
					eps[e.server.key()] = ep
				} else {
					eps[e.server.key()] = startModel(b, bc.spec, e.server)
					running[id] = eps[e.server.key()]
				}
			}
			for _, c := range rotate(bc.contenders(b, eps), nil, round()) {
				b.Run("client="+c.name, func(b *testing.B) { measureModel(b, bc.set, c) })
			}
		})
	}
}

// serverID names an emulator of BenchmarkBudget: its dataset and model.
func serverID(spec string, m model) string { return spec + " " + m.key() }

// serveBudget runs every emulator BenchmarkBudget needs in this process,
// prints "servers" and their endpoints by serverID in JSON, and serves
// until stdin closes.
func serveBudget() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cases, _ := budgetCases()
	eps := map[string]string{}
	for _, bc := range cases {
		for _, e := range bc.entrants {
			id := serverID(bc.spec, e.server)
			if _, ok := eps[id]; ok {
				continue
			}
			srv, err := s3emu.New(s3emu.Options{Dataset: bc.spec, TTFB: s3likeTTFB, ConnRate: s3likeRate,
				Throttle: e.server.throttle, Stalls: e.server.stalls})
			if err != nil {
				return err
			}
			if err := srv.Prepare(ctx); err != nil {
				return err
			}
			if eps[id], err = srv.Start("127.0.0.1:0"); err != nil {
				return err
			}
			defer srv.Close()
		}
	}
	js, err := json.Marshal(eps)
	if err != nil {
		return err
	}
	fmt.Println("servers", string(js))
	go func() {
		bufio.NewReader(os.Stdin).ReadString('\n') // EOF when run.sh ends
		stop()
	}()
	<-ctx.Done()
	return nil
}

// The S3-like network model.
const (
	s3likeTTFB = 30 * time.Millisecond
	s3likeRate = 12_500_000
)

// model is what a server does besides the S3-like network model.
type model struct {
	throttle s3emu.Throttle
	stalls   s3emu.Stalls
}

func (m model) key() string { return fmt.Sprintf("%+v", m) }

// entrant is one s3pd command line of a case.
type entrant struct {
	name   string
	old    bool     // run $S3PD_OLD_BIN instead of the binary under test
	flags  []string // after the common ones; --adaptive=off is dropped when the binary lacks it
	server model
	// proxied puts a stallProxy before the server; proxyStall, when
	// above 0, has it stall 2 % of the connections that long, mid-body
	// (0: it only relays, the reference of the same path without stalls).
	proxied    bool
	proxyStall time.Duration
}

// budgetCase is one target: a dataset, what runs on it and against what.
type budgetCase struct {
	name     string
	spec     string // the emulator's dataset
	set      dataset
	entrants []entrant
}

// quick reports whether $S3PD_BENCH_QUICK asks for the scaled-down cases.
func quick() bool { return os.Getenv("S3PD_BENCH_QUICK") != "" }

// fixedGrid is the hand-tuned references for many objects: n requests in
// flight, one GET per object, no adaptation.
func fixedGrid(srv model, ns ...int) []entrant {
	var es []entrant
	for _, n := range ns {
		es = append(es, entrant{name: "ref-c" + strconv.Itoa(n), server: srv,
			flags: []string{"--adaptive=off", "--workers", strconv.Itoa(n), "--threads", "1"}})
	}
	return es
}

// budgetCases are the cases of BenchmarkBudget; the s3pd under test is
// "s3pd" in each, its references are named "ref-...".
func budgetCases() (cases []budgetCase, note string) {
	stall := 5 * time.Second
	bigThrottled, grid := 2048, []int{16, 32, 48, 64}
	if quick() {
		stall, bigThrottled, grid = time.Second, 512, []int{32, 48}
	}
	plain := model{}
	threads := []entrant{{name: "s3pd"},
		{name: "ref-t32", flags: []string{"--adaptive=off", "--threads", "32"}},
		{name: "ref-t64", flags: []string{"--adaptive=off", "--threads", "64"}}}
	throttled := model{throttle: s3emu.Throttle{MaxInFlight: 48}}
	rated := model{throttle: s3emu.Throttle{PrefixRate: 1000}}
	stalled := model{stalls: s3emu.Stalls{Fraction: 0.02, For: stall, Seed: 1}}
	m4 := func(n int) dataset {
		return dataset{name: fmt.Sprintf("%dx4MiB", n), prefix: "m4/", objects: n, size: 4 << 20}
	}
	k64 := dataset{name: "5000x64KiB", prefix: "k64/", objects: 5000, size: 64 << 10}
	cases = []budgetCase{
		{name: "one512MiB", spec: "one:1:512MiB", set: dataset{prefix: "one/", objects: 1, size: 512 << 20}, entrants: threads},
		{name: "skewed", spec: "skew/a:15:32MiB,skew/b:1:512MiB", set: dataset{prefix: "skew/", objects: 16, size: 992 << 20 / 16}, entrants: threads},
		{name: "mcr48", spec: "m4:256:4MiB", set: m4(256), entrants: []entrant{
			{name: "s3pd", flags: []string{"--max-concurrent-requests", "48"}},
			{name: "ref-w48", flags: []string{"--adaptive=off", "--workers", "48", "--threads", "1"}}}},
		{name: "stall2pct", spec: "m4:256:4MiB", set: m4(256), entrants: []entrant{
			{name: "s3pd", server: stalled},
			{name: "ref-nostall", server: plain}}},
		{name: "stall2pct-proxy", spec: "m4:256:4MiB", set: m4(256), entrants: []entrant{
			{name: "s3pd", server: plain, proxied: true, proxyStall: stall},
			{name: "ref-nostall", server: plain, proxied: true},
			{name: "direct-nostall", server: plain}}},
		{name: "inflight48-256", spec: "m4:256:4MiB", set: m4(256),
			entrants: append([]entrant{{name: "s3pd", server: throttled}}, fixedGrid(throttled, grid...)...)},
		{name: fmt.Sprintf("inflight48-%d", bigThrottled), spec: fmt.Sprintf("m4:%d:4MiB", bigThrottled), set: m4(bigThrottled),
			entrants: append([]entrant{{name: "s3pd", server: throttled}}, fixedGrid(throttled, grid...)...)},
		{name: "rate1000", spec: "k64:5000:64KiB", set: k64,
			entrants: append([]entrant{{name: "s3pd", server: rated}}, fixedGrid(rated, grid...)...)},
	}
	if os.Getenv("S3PD_OLD_BIN") != "" {
		// The fault-free sets against the older binary, with the window
		// held at the budget beside them (what the climb from 32 costs),
		// and four times longer runs (what is left of that cost there).
		nofault := []entrant{{name: "s3pd"}, {name: "ref-old", old: true}, {name: "adaptive-off", flags: []string{"--adaptive=off"}}}
		cases = append(cases,
			budgetCase{name: "nofault-256x4MiB", spec: "m4:256:4MiB", set: m4(256), entrants: nofault},
			budgetCase{name: "nofault-5000x64KiB", spec: "k64:5000:64KiB", set: k64, entrants: nofault})
		if !quick() {
			cases = append(cases,
				budgetCase{name: "nofault-1024x4MiB", spec: "l4:1024:4MiB", entrants: nofault,
					set: dataset{name: "1024x4MiB", prefix: "l4/", objects: 1024, size: 4 << 20}},
				budgetCase{name: "nofault-20000x64KiB", spec: "l64:20000:64KiB", entrants: nofault,
					set: dataset{name: "20000x64KiB", prefix: "l64/", objects: 20000, size: 64 << 10}})
		}
	} else {
		note = "S3PD_OLD_BIN not set: the fault-free sets are not compared with an older binary"
	}
	return cases, note
}

// contenders turns the case's entrants into commands against eps (one
// endpoint per server model).
func (bc budgetCase) contenders(tb testing.TB, eps map[string]string) []contender {
	var cs []contender
	for _, e := range bc.entrants {
		bin := s3pdBinary(tb)
		if e.old {
			bin = os.Getenv("S3PD_OLD_BIN")
		}
		flags := e.flags
		if !hasFlag(tb, bin, "--adaptive") {
			flags = slices.DeleteFunc(slices.Clone(flags), func(f string) bool { return strings.HasPrefix(f, "--adaptive") })
		}
		ep := eps[e.server.key()]
		if e.proxied {
			fraction := 0.0
			if e.proxyStall > 0 {
				fraction = 0.02
			}
			proxy := startStallProxy(tb, strings.TrimPrefix(ep, "http://"), fraction, e.proxyStall, 1)
			ep = "http://" + proxy.addr()
			proxies.Store(ep, proxy)
		}
		cs = append(cs, contender{name: e.name, cmd: func(tb testing.TB, _ string, d dataset, _ string) ([]string, []string) {
			argv := []string{bin, "get", "s3://bench/" + d.prefix, "--benchmark", "--endpoint-url", ep, "--quiet", "--json"}
			return append(argv, flags...), nil
		}})
	}
	return cs
}

var (
	flagsMu   sync.Mutex
	flagsSeen = map[string]string{} // binary -> its `get --help`
)

// hasFlag reports whether binary's get command knows flag.
func hasFlag(tb testing.TB, bin, flag string) bool {
	flagsMu.Lock()
	defer flagsMu.Unlock()
	help, ok := flagsSeen[bin]
	if !ok {
		out, err := exec.Command(bin, "get", "--help").CombinedOutput()
		if err != nil {
			tb.Fatalf("%s get --help: %v\n%s", bin, err, out)
		}
		help = string(out)
		flagsSeen[bin] = help
		if !strings.Contains(help, "--adaptive") {
			tb.Logf("%s has no --adaptive: its references run without it", bin)
		}
	}
	return strings.Contains(help, flag+" ")
}

// loadAvg is the machine's load average over 1, 5 and 15 minutes.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

// startModel starts an emulator child for dataset with the S3-like
// network model and m.
func startModel(tb testing.TB, spec string, m model) string {
	tb.Helper()
	th, err := json.Marshal(m.throttle)
	if err != nil {
		tb.Fatal(err)
	}
	st, err := json.Marshal(m.stalls)
	if err != nil {
		tb.Fatal(err)
	}
	return startServerEnv(tb, spec, s3likeTTFB, s3likeRate, "S3PD_BENCH_THROTTLE="+string(th), "S3PD_BENCH_STALLS="+string(st))
}

// serverStats reads a child emulator's counters, resetting them when
// reset is set.
func serverStats(tb testing.TB, endpoint string, reset bool) s3emu.Stats {
	tb.Helper()
	url := endpoint + "/_s3emu/stats"
	if reset {
		url += "?reset=1"
	}
	resp, err := http.Get(url)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	var rep s3emu.StatsReport
	if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil {
		tb.Fatalf("read %s: %v", url, err)
	}
	return rep.Stats
}

// measureModel runs c over d b.N times, each against a server whose
// counters were just reset (so it stalls the same GETs and its throttle
// starts full), and reports, besides the time, the share of GETs answered
// SlowDown, the stalls, the most requests the server saw in flight, CPU
// seconds per GiB, the peak RSS, the bytes the server sent over the
// dataset's (sent-x) and the requests beyond the first of each range,
// takeovers and retries, over the GETs it answered (extra-GET-%, from
// s3pd's summary: absent for a binary that does not count ranges).
func measureModel(b *testing.B, d dataset, c contender) {
	home := b.TempDir()
	b.SetBytes(d.bytes())
	argv, env := c.cmd(b, "", d, "")
	ep := argv[slices.Index(argv, "--endpoint-url")+1]
	proxy := proxyAt(ep)
	if proxy != nil {
		ep = "http://" + proxy.target // the server's counters, behind the proxy
	}
	var cpu time.Duration
	var rss, gets, throttled, stalls, peak, sent, extra int64
	counted := true
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		serverStats(b, ep, true)
		if proxy != nil {
			proxy.reset()
		}
		b.StartTimer()
		u := runChild(b, home, env, slices.Clone(argv)...)
		b.StopTimer()
		st := serverStats(b, ep, false)
		gets += st.GetRequests
		throttled += st.ThrottledGets
		stalls += st.Stalls
		if proxy != nil {
			stalls += proxy.stalls.Load()
		}
		peak = max(peak, st.MaxInFlight)
		sent += st.BytesSent
		if s, ok := lastSummary(u.out); ok && s.Ranges > 0 {
			extra += s.Requests - s.Ranges
		} else {
			counted = false
		}
		cpu += u.cpu
		rss = max(rss, u.maxRSS)
		b.StartTimer()
	}
	b.ReportMetric(100*float64(throttled)/float64(max(gets, 1)), "slowdown-%")
	b.ReportMetric(float64(stalls)/float64(b.N), "stalls/op")
	b.ReportMetric(float64(peak), "peak-in-flight")
	b.ReportMetric(cpu.Seconds()/float64(b.N)/(float64(d.bytes())/(1<<30)), "cpu-s/GiB")
	b.ReportMetric(float64(rss)/(1<<20), "peak-RSS-MiB")
	b.ReportMetric(float64(sent)/float64(d.bytes())/float64(b.N), "sent-x")
	if counted {
		b.ReportMetric(100*float64(extra)/float64(max(gets, 1)), "extra-GET-%")
	}
}

// lastSummary reads the --json summary line from what s3pd printed.
func lastSummary(out string) (runSummary, bool) {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		var s runSummary
		if json.Unmarshal([]byte(lines[i]), &s) == nil && s.Type == "summary" {
			return s, true
		}
	}
	return runSummary{}, false
}
