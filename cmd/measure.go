package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"github.com/s3pd/s3pd/internal/job"
	"github.com/s3pd/s3pd/pkg/config"
	"github.com/s3pd/s3pd/pkg/local"
	"github.com/s3pd/s3pd/pkg/nics"
	"github.com/s3pd/s3pd/pkg/report"
	"github.com/s3pd/s3pd/pkg/s3store"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// reportFlags are bench's and get's flags for measurements: the HTML
// report and the sampling interval of the time series.
type reportFlags struct {
	path     string
	interval time.Duration
}

// reportAbout names a run in its report and says which lines it prints.
type reportAbout struct {
	// origins say where each setting came from (for the report).
	origins *config.Origins
	// command and source name the run in the report.
	command, source, dest string
	// round is the round of bench --repeat (0 without).
	round int
	// lines says to print interval lines with --json: always for bench,
	// for get when --interval is given (its --json output otherwise stays
	// one line per object and a summary).
	lines bool
}

func (r *reportFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&r.path, "report", "", "write a self-contained HTML report of the run (charts, percentiles, the likely bottleneck) to FILE at its end, even a failed or interrupted one")
	fs.DurationVar(&r.interval, "interval", time.Second, `length of one interval of the time series: the report's charts, and "interval" lines of --json (bench always prints them, get when --interval is given)`)
}

// check validates the flags before anything runs: the report's
// directory must be writable and outside dest (a report inside the
// destination would become part of the data).
func (r *reportFlags) check(dest string) error {
	if r.interval < 0 {
		return usageErrorf("--interval %s: want a positive duration", r.interval)
	}
	if r.interval == 0 {
		r.interval = time.Second
	}
	if r.path == "" {
		return nil
	}
	abs, err := filepath.Abs(r.path)
	if err != nil {
		return usageErrorf("--report %s: %v", r.path, err)
	}
	if st, err := os.Stat(abs); err == nil && st.IsDir() {
		return usageErrorf("--report %s is a directory: give a file name", r.path)
	}
	if dest != "" && dest != "-" {
		d, err := filepath.Abs(dest)
		if err == nil && (abs == d || strings.HasPrefix(abs, d+string(filepath.Separator))) {
			return usageErrorf("--report %s is inside DEST %s: write it elsewhere", r.path, dest)
		}
	}
	if st, err := os.Stat(filepath.Dir(abs)); err == nil && !st.IsDir() {
		return usageErrorf("--report %s: %s is not a directory", r.path, filepath.Dir(abs))
	}
	if err := local.CheckWritable(filepath.Dir(abs)); err != nil {
		return usageErrorf("--report %s: %v", r.path, err)
	}
	return nil
}

// measurement gathers what the engine's summary does not hold: the time
// series, CPU time, the machine. It renders the interval lines of --json
// and writes the HTML report.
type measurement struct {
	f        *runEnv
	rep      *reporter
	flags    reportFlags
	about    reportAbout
	settings config.Settings
	embedded bool
	lanes    []string
	started  time.Time
	cpu0     time.Duration
	tls0     s3store.HandshakeCounts
	series   report.Series
	sum      transfer.Summary
	cpu      time.Duration
	tls      s3store.HandshakeCounts // the run's handshakes (since tls0)
	// warmup is left out of the steady figure (<0: auto).
	warmup time.Duration
	// classes, when set, counts the objects by class (bench).
	classes *job.Classes
	// server, when set, is the emulator's process; serverCPU its CPU
	// time during the run (from serverCPU0), serverPeak its peak memory.
	server                serverProcess
	serverCPU0, serverCPU time.Duration
	serverPeak            int64
	timed                 bool
	// machine0 and machine are every process's CPU time: at the start,
	// and during the run (machineCPU).
	machine0, machine time.Duration
}

func newMeasurement(f *runEnv, rep *reporter, lanes []string, s config.Settings, out runOutput) *measurement {
	m := &measurement{f: f, rep: rep, flags: out.report, about: out.about, settings: s, embedded: out.embedded,
		lanes: lanes, warmup: -1, server: out.server, timed: out.timed}
	if out.warmup != nil {
		m.warmup = *out.warmup
	}
	if m.flags.interval <= 0 {
		m.flags.interval = time.Second // commands without --interval (copy, sync)
	}
	m.begin()
	return m
}

// begin starts the measurement's clocks: when the measurement is made,
// and again as the engine starts.
func (m *measurement) begin() {
	m.started, m.cpu0, m.tls0, m.machine0 = time.Now(), cpuTime(), m.f.handshakeCounts(), machineCPU()
	if m.server != nil {
		m.serverCPU0 = m.server.cpu()
	}
}

// sample receives one interval from the engine (one goroutine).
func (m *measurement) sample(s transfer.Sample) {
	m.series.Add(s)
	if m.rep.json != nil && m.about.lines {
		m.rep.writeJSON(m.intervalLine(s))
	}
}

// ended records the run's summary and CPU time.
func (m *measurement) ended(sum transfer.Summary) {
	m.sum = sum
	m.cpu = cpuTime() - m.cpu0
	m.tls = m.f.handshakeCounts().Sub(m.tls0)
	if m.machine0 > 0 {
		m.machine = machineCPU() - m.machine0
	}
	if m.server != nil {
		m.serverCPU, m.serverPeak = m.server.cpu()-m.serverCPU0, m.server.peakRSSKiB()
	}
}

// intervalLine is one --json line per sampling interval.
type intervalLine struct {
	header
	At        float64 `json:"t_s"`
	Seconds   float64 `json:"seconds"`
	Bytes     int64   `json:"bytes"`
	BytesPS   float64 `json:"bytes_per_second"`
	Gibps     float64 `json:"gibps"`
	Gbps      float64 `json:"gbps"`
	Requests  int64   `json:"requests"`
	InFlight  int     `json:"in_flight"`
	Retries   int64   `json:"retries"`
	SlowDowns int64   `json:"slowdowns"`
	Objects   int64   `json:"objects"`
	Window    int     `json:"window"`
	// WriteWait is the share of the request time of the ranges that
	// ended in the interval spent writing (0 when none ended).
	WriteWait float64       `json:"write_wait_share"`
	Lanes     []laneSummary `json:"nics,omitempty"`
}

func (m *measurement) intervalLine(s transfer.Sample) intervalLine {
	secs := s.Length.Seconds()
	l := intervalLine{header: newHeader(lineInterval), At: s.At.Seconds(), Seconds: secs, Bytes: s.Bytes, BytesPS: perSecond(s.Bytes, secs), Gibps: gibps(s.Bytes, secs), Gbps: gbps(s.Bytes, secs),
		Requests: s.Requests, InFlight: s.InFlight, Retries: s.Retries, SlowDowns: s.SlowDowns, Objects: s.Objects, Window: s.Window}
	if s.RequestTime > 0 {
		l.WriteWait = float64(s.WriteTime) / float64(s.RequestTime)
	}
	if len(s.Lanes) > 1 {
		for i, n := range s.Lanes {
			l.Lanes = append(l.Lanes, laneSummary{Name: m.lanes[i], Bytes: n, BytesPerSecond: perSecond(n, secs), Gibps: gibps(n, secs), Gbps: gbps(n, secs)})
		}
	}
	return l
}

// writeJSON writes one --json line, serialised with the object lines.
func (r *reporter) writeJSON(v any) {
	r.mu.Lock()
	r.json.Encode(v)
	r.mu.Unlock()
}

// runMeasures are the summary's figures beyond the totals: percentiles,
// CPU, the time series' spread and the verdict.
type runMeasures struct {
	// The steady figure (report.Steady): the median of the intervals
	// after the warm-up, with their p10 and p90, in bytes per second
	// (0 when SteadyReached is false: too few intervals after it).
	SteadyBPS       float64 `json:"steady_bytes_per_second"`
	SteadyP10       float64 `json:"steady_p10_bytes_per_second"`
	SteadyP90       float64 `json:"steady_p90_bytes_per_second"`
	SteadyReached   bool    `json:"steady_reached"`
	SteadyIntervals int     `json:"steady_intervals"`
	WarmupS         float64 `json:"warmup_s"`
	// Classes are bench's rows per class of objects.
	Classes []classRow `json:"classes,omitempty"`
	// CPUCores is the client's CPU time over the run's time; the
	// emulator's figures are its process's (bench without a URL).
	CPUCores           float64 `json:"cpu_cores"`
	EmulatorCPUSeconds float64 `json:"emulator_cpu_seconds,omitempty"`
	EmulatorCores      float64 `json:"emulator_cores,omitempty"`
	EmulatorPeakRSS    int64   `json:"emulator_peak_rss_kib,omitempty"`
	// MachineCores is the cores every process of the machine kept busy
	// during the run, on average (0: not known).
	MachineCores float64 `json:"machine_busy_cores"`
	// Machine's cores, for the text summary.
	cores int
	// runS is the run's time, and timed says the clock ended it (the
	// text summary's headline).
	runS     float64
	bytes    int64
	timed    bool
	embedded bool

	TTFB90ms     float64 `json:"ttfb_p90_ms"`
	TTFB999ms    float64 `json:"ttfb_p999_ms"`
	Request50ms  float64 `json:"request_p50_ms"`
	Request90ms  float64 `json:"request_p90_ms"`
	Request99ms  float64 `json:"request_p99_ms"`
	Request999ms float64 `json:"request_p999_ms"`
	SlowDowns    int64   `json:"slowdowns"`
	CPUSeconds   float64 `json:"cpu_seconds"`
	CPUPerGiB    float64 `json:"cpu_seconds_per_gib"`
	WriteShare   float64 `json:"write_wait_share"`
	IntervalS    float64 `json:"interval_s"`
	Intervals    int     `json:"intervals"`
	GibpsMin     float64 `json:"interval_gibps_min"`
	GibpsMedian  float64 `json:"interval_gibps_median"`
	GibpsMax     float64 `json:"interval_gibps_max"`
	InFlightMean float64 `json:"in_flight_mean"`
	InFlightPeak int     `json:"in_flight_peak"`
	// Scheme is the endpoint's, "https" or "http" (bench compare warns
	// across schemes); Transport says it in words. The TLS figures are
	// the client's count of its handshakes, their summed time and its
	// share of the summed request time.
	Scheme         string  `json:"scheme"`
	Transport      string  `json:"transport"`
	TLSHandshakes  int64   `json:"tls_handshakes"`
	TLSResumed     int64   `json:"tls_resumed"`
	TLSHandshakeMS float64 `json:"tls_handshake_ms"`
	TLSShare       float64 `json:"tls_handshake_share"`
	Window         int     `json:"window"`
	WindowStop     string  `json:"window_stop"`
	WindowKnee     int     `json:"window_knee"`
	// WindowPhases are the window's transitions (transfer.WindowChange).
	WindowPhases []windowPhase `json:"window_phases"`
	Bottleneck   string        `json:"bottleneck"`
	Verdict      string        `json:"verdict"`
	Round        int           `json:"round,omitempty"`
}

// windowPhase is one transition of the window in --json.
type windowPhase struct {
	AtMS   float64 `json:"at_ms"`
	Phase  string  `json:"phase"`
	Window int     `json:"window"`
}

// windowPhases renders the window's transitions (an empty list, not
// null, with none).
func windowPhases(cs []transfer.WindowChange) []windowPhase {
	out := make([]windowPhase, 0, len(cs))
	for _, c := range cs {
		out = append(out, windowPhase{AtMS: ms(c.At), Phase: c.Phase.String(), Window: c.Window})
	}
	return out
}

// measures computes the summary's extra figures.
func (m *measurement) measures() runMeasures {
	s := m.sum
	st := report.StatsOf(m.series.Samples())
	v := report.Diagnose(m.run("", nil))
	r := runMeasures{
		TTFB90ms: ms(s.TTFB.Quantile(0.9)), TTFB999ms: ms(s.TTFB.Quantile(0.999)),
		Request50ms: ms(s.Request.Quantile(0.5)), Request90ms: ms(s.Request.Quantile(0.9)),
		Request99ms: ms(s.Request.Quantile(0.99)), Request999ms: ms(s.Request.Quantile(0.999)),
		SlowDowns: s.SlowDowns, CPUSeconds: m.cpu.Seconds(),
		IntervalS: m.flags.interval.Seconds(), Intervals: st.Intervals,
		GibpsMin: st.MinGibps, GibpsMedian: st.MedianGibps, GibpsMax: st.MaxGibps,
		InFlightMean: s.InFlightMean, InFlightPeak: s.InFlightPeak,
		Window: s.Window, WindowStop: s.WindowStop, WindowKnee: s.WindowKnee,
		WindowPhases: windowPhases(s.WindowPhases),
		Bottleneck:   v.Bottleneck, Verdict: v.Line, Round: m.about.round,
		Scheme: m.scheme(), Transport: m.transport(),
		TLSHandshakes: m.tls.Total, TLSResumed: m.tls.Resumed, TLSHandshakeMS: ms(m.tls.Time),
		TLSShare: m.reportTLS().Share(s.RequestTime),
	}
	if s.Bytes > 0 {
		r.CPUPerGiB = m.cpu.Seconds() / (float64(s.Bytes) / (1 << 30))
	}
	steady := report.SteadyOf(m.series.Samples(), m.warmup)
	r.SteadyBPS, r.SteadyP10, r.SteadyP90 = steady.Median, steady.P10, steady.P90
	r.SteadyReached, r.SteadyIntervals, r.WarmupS = steady.OK, steady.Intervals, steady.Warmup.Seconds()
	secs := s.Elapsed.Seconds()
	r.Classes = classTable(m.classes, secs)
	r.cores, r.runS, r.bytes, r.timed, r.embedded = runtime.NumCPU(), secs, s.Bytes, m.timed, m.embedded
	if secs > 0 {
		r.CPUCores, r.MachineCores = m.cpu.Seconds()/secs, m.machine.Seconds()/secs
		if m.server != nil {
			r.EmulatorCores = m.serverCPU.Seconds() / secs
		}
	}
	if m.server != nil {
		r.EmulatorCPUSeconds, r.EmulatorPeakRSS = m.serverCPU.Seconds(), m.serverPeak
	}
	if s.RequestTime > 0 {
		r.WriteShare = float64(s.WriteTime) / float64(s.RequestTime)
	}
	return r
}

// printSteady writes the headline of a bench: the steady figure with its
// spread, next to the whole run, or why there is none.
func printSteady(w io.Writer, r runMeasures) {
	whole := fmt.Sprintf("whole run: %s in %s", humanBytes(r.bytes), humanSeconds(r.runS))
	if r.SteadyReached {
		div, unit := float64(1<<20), "MiB/s" // the spread in the median's unit
		if r.SteadyBPS >= 1<<30 {
			div, unit = 1<<30, "GiB/s"
		}
		fmt.Fprintf(w, "throughput, steady: %s, p10 %s, p90 %s %s, over %d intervals after a warm-up of %s; %s\n",
			humanRate(r.SteadyBPS), threeDigits(r.SteadyP10/div), threeDigits(r.SteadyP90/div), unit, r.SteadyIntervals, humanSeconds(r.WarmupS), whole)
		return
	}
	share := 0.0
	if r.runS > 0 {
		share = min(r.WarmupS/r.runS, 1)
	}
	what, fix := "the prefix is", "--duration 30s reads it again"
	if r.embedded {
		what = "the dataset is"
	}
	if r.timed {
		what, fix = "the run is", "give a longer --duration"
	}
	fmt.Fprintf(w, "throughput, steady: not reached: the ramp took %s of the %s run (%.0f%%), leaving %d intervals (want %d): %s too short for a steady figure; %s; %s\n",
		humanSeconds(min(r.WarmupS, r.runS)), humanSeconds(r.runS), 100*share, r.SteadyIntervals, report.MinSteady, what, fix, whole)
}

// printMeasures writes the text summary's lines for r.
func printMeasures(w io.Writer, r runMeasures) {
	if r.EmulatorPeakRSS > 0 || r.EmulatorCPUSeconds > 0 {
		fmt.Fprintf(w, "cpu: client %.2f s (%.1f of %d cores), %.2f s per GiB; emulator %.2f s (%.1f cores), its peak memory %s\n",
			r.CPUSeconds, r.CPUCores, r.cores, r.CPUPerGiB, r.EmulatorCPUSeconds, r.EmulatorCores, humanBytes(r.EmulatorPeakRSS*1024))
	} else {
		fmt.Fprintf(w, "cpu: %.2f s (%.1f of %d cores), %.2f s per GiB\n", r.CPUSeconds, r.CPUCores, r.cores, r.CPUPerGiB)
	}
	for _, c := range r.Classes {
		size := ""
		if c.SizeBytes > 0 {
			size = " (" + humanBytes(c.SizeBytes) + ")"
		}
		fmt.Fprintf(w, "class %s%s: %d objects, %s, %s objects/s; first byte p50 %.1f ms, p90 %.1f ms, p99 %.1f ms\n",
			c.Name, size, c.Objects, humanRate(c.BytesPerSecond), humanCount(c.ObjectsPerSecond), c.TTFB50ms, c.TTFB90ms, c.TTFB99ms)
	}
	if r.Scheme == "https" {
		mean := 0.0
		if r.TLSHandshakes > 0 {
			mean = r.TLSHandshakeMS / float64(r.TLSHandshakes)
		}
		fmt.Fprintf(w, "tls: over %s; %d handshakes (%d resumed), %.1f ms each on average, %.1f%% of the request time\n",
			r.Transport, r.TLSHandshakes, r.TLSResumed, mean, 100*r.TLSShare)
	} else {
		fmt.Fprintf(w, "tls: none, over %s\n", r.Transport)
	}
	if r.Intervals > 1 {
		fmt.Fprintf(w, "over time (%d intervals of %g s): min %s, median %s, max %s\n",
			r.Intervals, r.IntervalS, report.RateOfGibps(r.GibpsMin), report.RateOfGibps(r.GibpsMedian), report.RateOfGibps(r.GibpsMax))
	}
	fmt.Fprintf(w, "verdict: %s\n", r.Verdict)
}

// run is the report's view of the finished run.
func (m *measurement) run(status string, runErr error) report.Run {
	r := report.Run{
		Command: m.about.command, Source: m.about.source, Dest: m.about.dest,
		Version: m.f.Version, Started: m.started, Status: status,
		Settings: redactedSettings(m.settings, m.about.origins),
		Machine:  machine(m.settings), Summary: m.sum, Samples: m.series.Samples(),
		CPU: m.cpu, PeakRSSKiB: peakRSS(), MaxRequests: m.settings.MaxConcurrentRequests,
		ServerInProcess: m.embedded && m.server == nil, Transport: m.transport(), TLS: m.reportTLS(),
		Warmup: m.warmup, Classes: reportClasses(m.classes), MachineCPU: m.machine,
	}
	if m.server != nil {
		r.Server = &report.Process{CPU: m.serverCPU, PeakRSSKiB: m.serverPeak}
	}
	if m.rep != nil && m.rep.fleet != nil {
		r.Fleet = reportFleet(m.rep.fleet())
	}
	var ee *ExitError
	if runErr != nil && (!errors.As(runErr, &ee) || ee.Err != nil) {
		r.Error = oneLine(runErr.Error())
	}
	return r
}

// finish writes the report, when one was asked for, whatever the run's
// outcome, and returns the run's error (or the report's, when the run
// succeeded and the report could not be written).
func (m *measurement) finish(ctx context.Context, runErr error) error {
	if m.flags.path == "" {
		return runErr
	}
	status := report.StatusOK
	switch {
	case ctx.Err() != nil || exitCode(runErr) == ExitInterrupted:
		status = report.StatusInterrupted
	case runErr != nil:
		status = report.StatusFailed
	}
	err := os.MkdirAll(filepath.Dir(m.flags.path), 0o755)
	if err == nil {
		err = report.WriteFile(m.flags.path, m.run(status, runErr))
	}
	if err != nil {
		if runErr != nil {
			m.f.Logger.Error("report not written", zap.Error(err))
			return runErr
		}
		return err
	}
	if w := m.rep.out; w != nil {
		fmt.Fprintf(w, "report: %s\n", printable(m.flags.path))
	}
	return runErr
}

// scheme is the endpoint's scheme: "https" for S3 itself.
func (m *measurement) scheme() string { return endpointScheme(m.settings.EndpointURL) }

// endpointScheme is the scheme of an endpoint URL, "https" when there is
// none (S3's own endpoints).
func endpointScheme(endpoint string) string {
	if endpoint == "" {
		return "https"
	}
	if u, err := url.Parse(endpoint); err == nil && u.Scheme != "" {
		return strings.ToLower(u.Scheme)
	}
	return "https"
}

// transport says in words how the requests travelled.
func (m *measurement) transport() string {
	t := "plain HTTP"
	if m.scheme() == "https" {
		t = "HTTPS"
	}
	where := "in-process"
	if m.server != nil {
		where = "emulator process"
	}
	switch {
	case m.embedded && t == "HTTPS":
		t += " (self-signed, " + where + ")"
	case m.embedded:
		t += " (" + where + ")"
	}
	return t
}

// reportTLS is the run's handshakes as the report reads them.
func (m *measurement) reportTLS() report.TLS {
	return report.TLS{Handshakes: m.tls.Total, Resumed: m.tls.Resumed, Time: m.tls.Time}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// machine describes this host for the report and the verdict.
func machine(s config.Settings) report.Machine {
	m := report.Machine{CPUs: runtime.NumCPU(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	m.Hostname, _ = os.Hostname()
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	ifaces, err := nics.List(nics.Options{})
	if err != nil {
		return m
	}
	for _, i := range ifaces {
		if i.Loopback || !i.Up {
			continue
		}
		used := i.DefaultRoute
		if len(s.NICs) > 0 {
			used = false
			for _, n := range s.NICs {
				used = used || n == i.Name
			}
		}
		if loopbackEndpoint(s.EndpointURL) {
			used = false // loopback carries the traffic
		}
		m.NICs = append(m.NICs, report.NIC{Name: i.Name, SpeedMbps: i.SpeedMbps, Used: used})
	}
	return m
}

// loopbackEndpoint reports whether endpoint is on this host (127.x or
// localhost, over HTTP or HTTPS).
func loopbackEndpoint(endpoint string) bool {
	u, err := url.Parse(endpoint)
	if err != nil {
		return false
	}
	h := u.Hostname()
	return h == "localhost" || strings.HasPrefix(h, "127.") || h == "::1"
}

// redactedSettings lists the effective settings as `config show` does:
// a value that may hold a secret (an endpoint URL's user information) is
// redacted, one that cannot be shown safely is left out.
func redactedSettings(s config.Settings, origins *config.Origins) []report.Setting {
	var out []report.Setting
	for _, name := range config.Names() {
		v, ok := config.Printable(name, s.Format(name))
		if !ok {
			v = "REDACTED"
		}
		or := ""
		if origins != nil {
			or = origins.Get(name).String()
		}
		out = append(out, report.Setting{Name: name, Value: v, Origin: or})
	}
	return out
}
