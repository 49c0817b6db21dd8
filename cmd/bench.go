package cmd

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/s3pd/s3pd/internal/job"
	"github.com/s3pd/s3pd/pkg/config"
	"github.com/s3pd/s3pd/pkg/s3emu"
	"github.com/s3pd/s3pd/pkg/s3store"
	"github.com/s3pd/s3pd/pkg/store"
	"github.com/s3pd/s3pd/pkg/sweep"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// Defaults of the embedded emulator: S3's latency and per-connection pace.
const (
	defaultBenchDataset = "model:16:256MiB,shards:1024:1MiB,small:4096:64KiB"
	defaultBenchTTFB    = 30 * time.Millisecond
	defaultBenchRate    = "90MB"
)

type benchOptions struct {
	// url is the argument ("": the embedded emulator).
	url string
	// flags are the command's flags, for the settings they set.
	flags    *pflag.FlagSet
	output   outputFlags
	rules    ruleFlags
	dataset  string
	ttfb     time.Duration
	connRate string
	repeat   int
	sweep    sweepFlags
	// plainHTTP serves the embedded emulator over HTTP (--http).
	plainHTTP bool
	// duration and warmup are --duration and --warmup.
	duration, warmup autoDuration
}

// NewCmdBench builds `s3pd bench`. runF, when set, runs instead of
// runBench with the parsed options (tests).
func NewCmdBench(f *Factory, runF func(context.Context, *benchOptions) error) *cobra.Command {
	opts := &benchOptions{duration: autoDuration{auto: true}, warmup: autoDuration{auto: true}}
	c := &cobra.Command{
		Use:   "bench [flags] [s3://bucket/prefix]",
		Short: "Measure download throughput, latency and errors",
		Long: `Run the transfer engine into a discard sink and report what it measured:
objects and bytes, the rate (MiB/s or GiB/s, and decimal Gbit/s as network
cards are rated), what was verified, requests, retries (SlowDowns among
them) and requests in flight, time to first byte and request time (p50,
p90, p99, p99.9, one line each), peak memory, CPU time per GiB, the rate
over time (min, median, max of --interval) and a verdict naming the
bottleneck. --json writes the same figures as one summary line.

The headline, printed first, is the steady throughput: the median of the
intervals after the warm-up (--warmup, by default until the window of
requests in flight stopped climbing), with their p10 and p90, next to the
whole run's bytes and time. --duration D runs for D whatever the size of
the dataset or prefix, reading it again as needed; by default bench runs
up to 20 s against the embedded emulator's default dataset, ending once
the rate is steady, and reads a URL's prefix or a --dataset once.

With no URL, bench starts the S3 emulator (s3pd bench serve) in a child
process, so that its CPU and memory are told apart from the client's,
with a synthetic dataset and a realistic network model (30 ms before each
response, 90 MB/s per connection), so it runs on a fresh machine with no
AWS account. It serves HTTPS, as S3 does, with a self-signed certificate
the run trusts (--http: plain HTTP); the summary counts the TLS
handshakes. Each pass over the dataset reads fresh object names. Its
"model:" line says what the network model allows at most.

The summary's own words: "hedged" counts ranges taken over as
stragglers (asked for again on a new connection from the byte they
reached); "window N (why)" is the requests in flight the adaptive window
allowed at the end, and why it stands there: budget (it reached
max_concurrent_requests), knee (a step up bought no more throughput),
slowdown (the server's SlowDowns set it) or demand (the requests never
filled it); "tail pieces" are ranges planned shorter than a part so that
the last wave of the run ends together; "overfetch" is bytes received and
not kept (a server that ignored Range, or a part sent again).`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageErrorf("bench takes at most one s3:// URL, got %d", len(args))
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			opts.url, opts.flags = "", c.Flags()
			if len(args) == 1 {
				opts.url = args[0]
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return runBench(c.Context(), f, opts)
		},
	}
	fs := c.Flags()
	addSettingsFlags(fs)
	opts.output.register(fs)
	opts.output.report.register(fs)
	opts.rules.register(fs)
	fs.StringVar(&opts.dataset, "dataset", defaultBenchDataset, "synthetic dataset of the embedded emulator (NAME:COUNT:SIZE,...)")
	nonNegativeDurationVar(fs, &opts.ttfb, "ttfb", defaultBenchTTFB, "embedded emulator: delay before each response")
	fs.StringVar(&opts.connRate, "conn-rate", defaultBenchRate, "embedded emulator: bytes per second per connection (0: no cap)")
	opts.sweep.register(fs)
	fs.BoolVar(&opts.plainHTTP, "http", false, "embedded emulator: serve plain HTTP, not HTTPS")
	fs.Var(&opts.duration, "duration", `how long each round runs, reading the dataset or prefix again as needed (auto: up to 20 s against the embedded emulator's default dataset, ending once the rate is steady, else one pass; 0: one pass)`)
	fs.Var(&opts.warmup, "warmup", `time at the start left out of the steady figure (auto: until the window of requests in flight stopped climbing)`)
	fs.IntVar(&opts.repeat, "repeat", 1, "run N rounds and print a summary for each (compare runs with s3pd bench compare)")
	c.AddCommand(NewCmdBenchServe(f, nil), NewCmdBenchCompare(f, nil), NewCmdBenchDisk(f, nil))
	return c
}

func runBench(ctx context.Context, fac *Factory, opts *benchOptions) (err error) {
	cells, err := opts.check()
	if err != nil {
		return err
	}
	if opts.sweep.savePreset != "" && userPresetDir(fac.getenv()) == "" {
		// Refused now, not after the sweep has measured.
		return usageErrorf("--save-preset: no config folder (set HOME or XDG_CONFIG_HOME)")
	}
	f, settings, origins, err := startRun(fac, opts.flags, &opts.output, false)
	defer f.end(&err)
	if err != nil {
		return err
	}
	out := f.output(opts.output)
	url := "s3://bench/"
	var ds *s3emu.Dataset
	if opts.url != "" {
		url = opts.url
	} else {
		emu, set, err := startEmulator(ctx, f, opts, out, &settings, origins)
		if err != nil {
			return err
		}
		defer emu.stop()
		out.embedded, out.server, ds = true, emu, &set
	}
	if !opts.warmup.auto {
		out.warmup = &opts.warmup.d
	}
	out.about = reportAbout{origins: origins, command: "bench", source: url, lines: true}
	u, err := opts.rules.parseSource(url)
	if err != nil {
		return usageError(err)
	}
	if !u.Prefix {
		u.Key += "/"
	}
	if cells != nil {
		// The run's transport, with pools for the widest cell, is built
		// (and its settings checked) before the first cell.
		widest := settings
		for _, c := range cells {
			widest.MaxConcurrentRequests = max(widest.MaxConcurrentRequests, c.Requests)
		}
		if _, err := f.transport(ctx, widest); err != nil {
			return err
		}
		return runSweep(ctx, f, settings, u, cells, opts, out, ds)
	}
	client, err := s3Client(ctx, f, settings)
	if err != nil {
		return usageError(err)
	}
	eopts, err := runOptions(settings, opts.output)
	if err != nil {
		return err
	}
	spec := job.Spec{Engine: eopts, Bandwidth: settings.MaxBandwidth, Get: benchSpec(client, u, eopts, opts.output.stall, f)}
	return benchRounds(ctx, f, opts.repeat, func(out runOutput) error {
		how := jobRun{settings: settings, out: out, rules: opts.rules.rules, latency: true, clock: opts.clock(ds)}
		how.out.timed = how.clock != nil
		if how.classes = sizeClasses(); ds != nil {
			how.classes = datasetClasses(*ds)
			if how.clock != nil {
				how.clock.mix = true // a steady mix of the groups
			}
		}
		return runJob(ctx, f, spec, how)
	}, out)
}

// clock is one round's clock (nil: one pass over the listing): --duration
// D runs for D; auto runs up to benchAutoLimit against the emulator's
// default dataset, ending once steady. ds is the emulator's dataset (nil
// for a URL), whose later passes read fresh names.
func (opts *benchOptions) clock(ds *s3emu.Dataset) *benchClock {
	c := &benchClock{limit: opts.duration.d, warmup: -1}
	if !opts.warmup.auto {
		c.warmup = opts.warmup.d
	}
	if opts.duration.auto {
		if ds == nil || opts.flags.Changed("dataset") {
			return nil
		}
		c.limit, c.early = benchAutoLimit, true
	}
	if c.limit <= 0 {
		return nil
	}
	if ds != nil {
		c.pass = emulatorPass
	}
	return c
}

// benchSpec is bench's job: every object under the prefix, over the
// lanes of client's transport, into nothing.
func benchSpec(client s3store.ClientOptions, u s3store.URL, eopts transfer.Options, stall time.Duration, f *runEnv) *job.GetSpec {
	return &job.GetSpec{URL: s3Location(u), Source: s3Location(u), Stores: s3Stores(client, s3store.Request{}),
		Read: store.Options{Prefix: true, Verify: eopts.Verify != transfer.VerifyOff, StallTimeout: stall, OnRetry: f.logListRetry}}
}

// benchRounds runs n rounds of a bench, each with its own summary (and
// report, which the next round's replaces), and stops at the first
// round that fails.
func benchRounds(ctx context.Context, f *runEnv, n int, round func(runOutput) error, out runOutput) error {
	for i := 1; i <= n; i++ {
		if n > 1 {
			out.about.round = i
			if w := out.textOut(f.Factory); w != nil {
				fmt.Fprintf(w, "round %d of %d\n", i, n)
			}
		}
		if err := round(out); err != nil {
			return err
		}
	}
	if w := out.textOut(f.Factory); w != nil {
		if n == 1 {
			fmt.Fprintln(w, singleRoundNote)
		}
		fmt.Fprintln(w, benchTerms)
	}
	return nil
}

// benchTerms says what the summary's own words mean, once, after the
// last round.
const benchTerms = "terms: hedged = ranges taken over as stragglers, asked again on a new connection; " +
	"window N (why) = the requests in flight allowed at the end, and why it stands there (budget, knee, slowdown, demand); " +
	"tail pieces = ranges planned shorter so the last wave ends together; " +
	"overfetch = bytes received and not kept; s3pd bench --help says more"

// modelLine says what the emulator's network model allows at most: a
// per-connection rate times the requests in flight, so that a figure can
// be read against it (0: no cap, and the machine is the ceiling).
func modelLine(perConn int64, requests int) string {
	if perConn <= 0 || requests <= 0 {
		return "model: no per-connection cap: the figure is this machine's own ceiling, client and emulator sharing its cores"
	}
	return fmt.Sprintf("model: at most %s per connection x %d requests in flight = %s; on this machine, s3pd bench --ttfb 0 --conn-rate 0 reads its ceiling without the model",
		humanRate(float64(perConn)), requests, humanRate(float64(perConn)*float64(requests)))
}

// singleRoundNote follows the summary of a bench of one round: on a
// shared machine a second run can differ by half.
const singleRoundNote = "one round: a second run on a busy machine can differ by half; --repeat 3 and s3pd bench compare tell a change from noise"

// check checks bench's flags against each other (they do not depend on
// the settings) and returns --sweep's settings (nil without it).
func (opts *benchOptions) check() ([]sweep.Cell, error) {
	if _, err := opts.output.verifyMode(); err != nil {
		return nil, err
	}
	if _, err := opts.output.adaptiveMode(); err != nil {
		return nil, err
	}
	if err := opts.output.report.check(""); err != nil {
		return nil, err
	}
	if opts.repeat < 1 {
		return nil, usageErrorf("--repeat %d: want at least 1 round", opts.repeat)
	}
	if opts.plainHTTP && opts.url != "" {
		return nil, usageErrorf("--http is for the embedded emulator: the URL's endpoint has its own scheme")
	}
	cells, err := opts.sweep.cells()
	if err != nil {
		return nil, err
	}
	if cells != nil && (opts.repeat > 1 || opts.output.report.path != "") {
		return nil, usageErrorf("--sweep runs one short measurement per setting: --repeat and --report do not apply")
	}
	if cells != nil && (!opts.duration.auto || !opts.warmup.auto) {
		return nil, usageErrorf("--sweep measures each setting for --sweep-time: --duration and --warmup do not apply")
	}
	if _, err := opts.output.verifyMode(); err != nil {
		return nil, err
	}
	if _, err := opts.output.adaptiveMode(); err != nil {
		return nil, err
	}
	return cells, nil
}

// startEmulator starts the emulator that bench without a URL measures
// against, in a child process (emulatorProcess), over HTTPS with a
// self-signed certificate the run's clients trust (plain HTTP with
// --http), with the dataset's digests ready before the clock runs, and
// points settings at it. The caller stops it when the run ends.
func startEmulator(ctx context.Context, f *runEnv, opts *benchOptions, out runOutput, settings *config.Settings, origins *config.Origins) (*emulatorProcess, s3emu.Dataset, error) {
	if origins.Get("endpoint_url").Source != config.SourceDefault {
		return nil, s3emu.Dataset{}, usageErrorf("bench without a URL runs the embedded emulator; give an s3:// URL to use --endpoint-url")
	}
	if _, err := parseConnRate(opts.connRate); err != nil {
		return nil, s3emu.Dataset{}, usageErrorf("--conn-rate %q: %v", opts.connRate, err)
	}
	ds, err := s3emu.ParseDataset(opts.dataset)
	if err != nil {
		return nil, ds, usageErrorf("--dataset %q: %v", opts.dataset, err)
	}
	args := []string{"--dataset", opts.dataset, "--ttfb", opts.ttfb.String(), "--conn-rate", opts.connRate}
	if !opts.plainHTTP {
		args = append(args, "--tls-key-type", s3emu.KeyRSA) // as S3's certificates
	}
	emu, err := startEmulatorProcess(ctx, args, !opts.plainHTTP)
	if err != nil {
		return nil, ds, err
	}
	if emu.ca != "" {
		// The emulator is the only server of the run: its certificate is
		// the one authority to trust, whatever ca_bundle said.
		settings.CABundle = emu.ca
	}
	settings.EndpointURL, settings.NoSignRequest = emu.endpoint, true
	if settings.Region == "" {
		settings.Region = "us-east-1"
	}
	if w := out.textOut(f.Factory); w != nil {
		over := "plain HTTP"
		if emu.ca != "" {
			over = "HTTPS (self-signed)"
		}
		fmt.Fprintf(w, "emulator: %s over %s, in process %d, dataset %s, ttfb %s, %s/s per connection\n", emu.endpoint, over, emu.cmd.Process.Pid, opts.dataset, opts.ttfb, opts.connRate)
		rate, _ := parseConnRate(opts.connRate) // checked above
		fmt.Fprintln(w, modelLine(rate, settings.MaxConcurrentRequests))
	}
	return emu, ds, nil
}
