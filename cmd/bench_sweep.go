package cmd

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/s3pd/s3pd/configs"
	"github.com/s3pd/s3pd/internal/job"
	"github.com/s3pd/s3pd/pkg/config"
	"github.com/s3pd/s3pd/pkg/report"
	"github.com/s3pd/s3pd/pkg/s3emu"
	"github.com/s3pd/s3pd/pkg/s3store"
	"github.com/s3pd/s3pd/pkg/sweep"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// sweepFlags are bench's flags for a sweep over part size and concurrency.
type sweepFlags struct {
	on         bool
	parts      string
	requests   string
	per        time.Duration
	savePreset string
}

func (s *sweepFlags) register(fs *pflag.FlagSet) {
	fs.BoolVar(&s.on, "sweep", false, "measure every combination of --sweep-parts and --sweep-requests for --sweep-time each, print a table and the best setting")
	fs.StringVar(&s.parts, "sweep-parts", "8MiB,16MiB,32MiB", "part sizes a sweep tries")
	fs.StringVar(&s.requests, "sweep-requests", "64,256,1024", "requests in flight (max_concurrent_requests) a sweep tries")
	fs.DurationVar(&s.per, "sweep-time", 5*time.Second, "how long a sweep measures each setting")
	fs.StringVar(&s.savePreset, "save-preset", "", "with --sweep: save the best setting as preset NAME in s3pd's config folder (use it with --preset NAME)")
}

// presetName is what a saved preset may be called: a file name.
var presetName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// cells parses and checks the sweep's flags.
func (s *sweepFlags) cells() ([]sweep.Cell, error) {
	if !s.on {
		if s.savePreset != "" {
			return nil, usageErrorf("--save-preset needs --sweep")
		}
		return nil, nil
	}
	if s.per <= 0 {
		return nil, usageErrorf("--sweep-time %s: want a positive duration", s.per)
	}
	if name := s.savePreset; name != "" {
		if !presetName.MatchString(name) {
			return nil, usageErrorf("--save-preset %q: use letters, digits, '.', '_' and '-'", name)
		}
		if slices.Contains(configs.Names(), name) {
			return nil, usageErrorf("--save-preset %q is a built-in preset: choose another name", name)
		}
	}
	var parts []int64
	for _, p := range strings.Split(s.parts, ",") {
		n, err := config.ParseSize(p)
		if err != nil || n < 1<<20 || n > config.MaxPartSize {
			return nil, usageErrorf("--sweep-parts %q: want sizes from 1MiB to %s", p, config.FormatSize(config.MaxPartSize))
		}
		parts = append(parts, n)
	}
	var reqs []int
	for _, r := range strings.Split(s.requests, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(r))
		if err != nil || n < 1 || n > config.MaxRequests {
			return nil, usageErrorf("--sweep-requests %q: want whole numbers from 1 to %d", r, config.MaxRequests)
		}
		reqs = append(reqs, n)
	}
	return sweep.Grid(parts, reqs), nil
}

// sweepLine is one --json line per measured setting, and the best one.
type sweepLine struct {
	header
	PartSize int64   `json:"part_size"`
	Requests int     `json:"max_concurrent_requests"`
	Bytes    int64   `json:"bytes"`
	Seconds  float64 `json:"seconds"`
	Gibps    float64 `json:"gibps"`
	Gbps     float64 `json:"gbps"`
	TTFB50ms float64 `json:"ttfb_p50_ms"`
	InFlight float64 `json:"in_flight_mean"`
	Error    string  `json:"error,omitempty"`
	// Reason says how sweep_best was chosen.
	Reason    string `json:"reason,omitempty"`
	Preset    string `json:"preset,omitempty"`
	PresetYML string `json:"preset_file,omitempty"`
}

func newSweepLine(typ string, r sweep.Result) sweepLine {
	l := sweepLine{header: newHeader(typ), PartSize: r.PartSize, Requests: r.Requests, Bytes: r.Summary.Bytes,
		Seconds: r.Summary.Elapsed.Seconds(), Gibps: r.Gibps, Gbps: report.Gbps(r.Summary.Bytes, r.Summary.Elapsed), TTFB50ms: ms(r.Summary.TTFB50), InFlight: r.Summary.InFlightMean}
	if r.Err != nil {
		l.Error = oneLine(r.Err.Error())
	}
	return l
}

// runSweep measures each cell over fresh lanes into a discard sink, each
// a bench run (runJob) of its own for the sweep's time per cell. ds is
// the emulator's dataset (nil for a URL), whose later passes read fresh
// names.
func runSweep(ctx context.Context, f *runEnv, s config.Settings, u s3store.URL, cells []sweep.Cell, opts *benchOptions, out runOutput, ds *s3emu.Dataset) error {
	text, js := out.textOut(f.Factory), out.jsonOut(f.Factory)
	// A cell runs as bench --duration would, verifying as bench does, so
	// the two differ only by what a cell is: short, from a cold start,
	// rendering only its row, and with its window fixed at the setting
	// (--adaptive off): with the window's climb
	// --max-concurrent-requests is a ceiling the window may stop below
	// (at its knee), not what a row would measure.
	const row = "%10s %9s %10s %26s %11s %13s  %s\n"
	if text != nil {
		fmt.Fprintf(text, "sweep: %s, %s each, each from a cold start (new connections) with --adaptive off (the requests in flight fixed at the setting) and cut off at its time: compare the rows with each other, not with a whole bench run, whose window may stop below its ceiling\n",
			plural(int64(len(cells)), "setting"), opts.sweep.per)
		fmt.Fprintf(text, row, "PART SIZE", "REQUESTS", "IN FLIGHT", "RATE", "TTFB P50", "BYTES", "")
	}
	// A cell prints nothing of its own (its row is the sweep's) and
	// writes no report; failed objects still have their lines.
	quiet := out
	quiet.route, quiet.asJSON, quiet.quiet, quiet.report, quiet.timed = nil, false, true, reportFlags{}, true
	measure := func(ctx context.Context, c sweep.Cell, per time.Duration) (transfer.Summary, error) {
		cs := s
		cs.PartSize, cs.MultipartThreshold, cs.MaxConcurrentRequests = c.PartSize, c.PartSize, c.Requests
		// The cell's requests are the budget; as many objects may be
		// open, so small ones fill it too.
		cs.Workers = max(s.Workers, c.Requests)
		eopts, err := runOptions(cs, opts.output)
		if err != nil {
			return transfer.Summary{}, err
		}
		eopts.Adaptive = transfer.AdaptiveOff // the setting, not a ceiling
		eopts.DryRun, eopts.VerifyExisting = false, false
		client, err := s3Client(ctx, f, cs)
		if err != nil {
			return transfer.Summary{}, err
		}
		// The lanes' clients are built (and the bucket's region found)
		// before the connections are closed.
		get := benchSpec(client, u, eopts, opts.output.stall, f)
		lanes, err := s3store.NewLanes(ctx, u.Bucket, client)
		if err != nil {
			return transfer.Summary{}, err
		}
		get.Stores = stores(storeOptions{s3: s3store.OpenerOptions{Client: client, Lanes: lanes}})
		// Each cell starts from no connection, as a run would (over the
		// run's transport, whose TLS sessions resume).
		f.net.t.CloseIdle()
		// The cell's clock ends it at its time, from the engine's start;
		// the objects it cuts then are not failures.
		clock := &benchClock{limit: per, warmup: -1}
		if ds != nil {
			clock.pass = emulatorPass
		}
		var sum transfer.Summary
		how := jobRun{settings: cs, out: quiet, rules: opts.rules.rules, clock: clock, summary: &sum}
		err = runJob(ctx, f, job.Spec{Engine: eopts, Bandwidth: cs.MaxBandwidth, Get: get}, how)
		return sum, err
	}
	done := func(r sweep.Result) {
		if js != nil {
			writeJSONLine(js, newSweepLine("sweep", r))
		}
		if text != nil {
			errText := ""
			if r.Err != nil {
				errText = oneLine(r.Err.Error())
			}
			fmt.Fprintf(text, row, config.FormatSize(r.PartSize), strconv.Itoa(r.Requests), fmt.Sprintf("%.1f", r.Summary.InFlightMean), report.RateOfGibps(r.Gibps),
				fmt.Sprintf("%.1f ms", ms(r.Summary.TTFB50)), strconv.FormatInt(r.Summary.Bytes, 10), errText)
		}
	}
	results, err := sweep.Run(ctx, cells, opts.sweep.per, measure, done)
	if err != nil {
		return &ExitError{Code: ExitInterrupted}
	}
	best, ok := sweep.Best(results)
	if !ok {
		err := errors.New("sweep: no setting moved any data")
		for _, r := range results {
			if r.Err != nil {
				// Why the first cell failed: a certificate, an endpoint
				// that does not answer, fail every cell alike.
				err = fmt.Errorf("%w: %w", err, r.Err)
				break
			}
		}
		return &ExitError{Code: ExitFailed, Err: err}
	}
	line := newSweepLine("sweep_best", best)
	line.Reason = bestReason(best, results)
	if name := opts.sweep.savePreset; name != "" {
		host, _ := os.Hostname()
		comment := []string{
			fmt.Sprintf("Written by s3pd bench --sweep on %s at %s:", host, time.Now().UTC().Format(time.RFC3339)),
			fmt.Sprintf("%s from %s with %s parts and %d requests in flight.", report.RateOfGibps(best.Gibps), out.about.source, config.FormatSize(best.PartSize), best.Requests),
		}
		path, err := saveUserPreset(f.Factory, name, sweep.Preset(best, comment))
		if err != nil {
			return err
		}
		line.Preset, line.PresetYML = name, path
	}
	if js != nil {
		writeJSONLine(js, line)
	}
	if text != nil {
		fmt.Fprintf(text, "best: --partsize %s --max-concurrent-requests %d (%s): %s\n", config.FormatSize(best.PartSize), best.Requests, report.RateOfGibps(best.Gibps), line.Reason)
		if line.Preset != "" {
			fmt.Fprintf(text, "saved preset %s in %s: s3pd get --preset %s ...\n", line.Preset, line.PresetYML, line.Preset)
		}
	}
	return nil
}

// bestReason says how the sweep chose best among results: the fastest
// row, or the cheapest of those close to it.
func bestReason(best sweep.Result, results []sweep.Result) string {
	fastest, _ := sweep.Fastest(results)
	if fastest.Cell == best.Cell {
		return "the fastest row"
	}
	return fmt.Sprintf("the fewest requests in flight, then the smallest parts, of the rows within %.0f%% of the fastest (--partsize %s --max-concurrent-requests %d, %s): a gap that small is within a short measurement's noise, and fewer requests and smaller parts take fewer connections and less memory",
		sweep.CloseEnough*100, config.FormatSize(fastest.PartSize), fastest.Requests, report.RateOfGibps(fastest.Gibps))
}

// userPresetDir is where saved presets live: presets/ in s3pd's config
// folder ($XDG_CONFIG_HOME/s3pd, else ~/.config/s3pd).
func userPresetDir(getenv func(string) string) string {
	if xdg := getenv("XDG_CONFIG_HOME"); xdg != "" {
		return filepath.Join(xdg, "s3pd", "presets")
	}
	if home := getenv("HOME"); home != "" {
		return filepath.Join(home, ".config", "s3pd", "presets")
	}
	return ""
}

// saveUserPreset writes a preset through a temporary name and a rename.
func saveUserPreset(f *Factory, name string, yaml []byte) (string, error) {
	dir := userPresetDir(f.getenv())
	if dir == "" {
		return "", usageErrorf("--save-preset: no config folder (set HOME or XDG_CONFIG_HOME)")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("save preset %s: %w", name, err)
	}
	path := filepath.Join(dir, name+".yaml")
	tmp, err := os.CreateTemp(dir, "."+name+".yaml.tmp-*")
	if err != nil {
		return "", fmt.Errorf("save preset %s: %w", name, err)
	}
	_, err = tmp.Write(yaml)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("save preset %s: %w", name, err)
	}
	return path, nil
}

// readPreset returns a preset's YAML: a built-in one, else one saved in
// the config folder.
func readPreset(getenv func(string) string, name string) ([]byte, error) {
	b, err := configs.Read(name)
	if err == nil || !presetName.MatchString(name) {
		return b, err
	}
	dir := userPresetDir(getenv)
	if dir == "" {
		return nil, err
	}
	ub, uerr := os.ReadFile(filepath.Join(dir, name+".yaml"))
	switch {
	case uerr == nil:
		return ub, nil
	case errors.Is(uerr, iofs.ErrNotExist):
		return nil, fmt.Errorf("%w, and none saved in %s", err, dir)
	}
	return nil, fmt.Errorf("read preset %q: %w", name, uerr)
}

// getenv is the factory's Getenv, or the process's.
func (f *Factory) getenv() func(string) string {
	if f != nil && f.Getenv != nil {
		return f.Getenv
	}
	return os.Getenv
}
