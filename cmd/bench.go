package cmd

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/s3pd/s3pd/internal/job"
	"github.com/s3pd/s3pd/pkg/config"
	"github.com/s3pd/s3pd/pkg/s3emu"
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
}

// NewCmdBench builds `s3pd bench`. runF, when set, runs instead of
// runBench with the parsed options (tests).
func NewCmdBench(f *Factory, runF func(context.Context, *benchOptions) error) *cobra.Command {
	opts := &benchOptions{}
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

With no URL, bench starts the embedded S3 emulator with a synthetic dataset
and a realistic network model (30 ms before each response, 90 MB/s per
connection), so it runs on a fresh machine with no AWS account. It serves
HTTPS, as S3 does, with a self-signed certificate the run trusts (--http:
plain HTTP); the summary counts the TLS handshakes.`,
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
	if opts.url != "" {
		url = opts.url
	} else {
		stop, err := startEmulator(ctx, f, opts, out, &settings, origins)
		if err != nil {
			return err
		}
		defer stop()
		out.embedded = true
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
		return runSweep(ctx, f, settings, u, cells, opts, out)
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
		return runJob(ctx, f, spec, jobRun{settings: settings, out: out, rules: opts.rules.rules, latency: true})
	}, out)
}

// benchSpec is bench's job: every object under the prefix, over the
// lanes of client's transport, into nothing.
func benchSpec(client job.ClientOptions, u job.URL, eopts transfer.Options, stall time.Duration, f *runEnv) *job.GetSpec {
	return &job.GetSpec{URL: "s3://" + u.Bucket + "/" + u.Key, Client: client, Source: job.S3Spec{Key: u.Key, Prefix: true,
		Target: job.Target{Bucket: u.Bucket, Verify: eopts.Verify != transfer.VerifyOff, StallTimeout: stall, OnRetry: f.logListRetry}}}
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
	if w := out.textOut(f.Factory); n == 1 && w != nil {
		fmt.Fprintln(w, singleRoundNote)
	}
	return nil
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
	if _, err := opts.output.verifyMode(); err != nil {
		return nil, err
	}
	if _, err := opts.output.adaptiveMode(); err != nil {
		return nil, err
	}
	return cells, nil
}

// startEmulator starts the embedded emulator that bench without a URL
// measures against, over HTTPS with a self-signed certificate the run's
// clients trust (plain HTTP with --http), with the dataset ready before
// the clock runs, and points settings at it. The caller calls stop when
// the run ends.
func startEmulator(ctx context.Context, f *runEnv, opts *benchOptions, out runOutput, settings *config.Settings, origins *config.Origins) (stop func(), err error) {
	if origins.Get("endpoint_url").Source != config.SourceDefault {
		return nil, usageErrorf("bench without a URL runs the embedded emulator; give an s3:// URL to use --endpoint-url")
	}
	rate, err := parseConnRate(opts.connRate)
	if err != nil {
		return nil, usageErrorf("--conn-rate %q: %v", opts.connRate, err)
	}
	eo := s3emu.Options{Dataset: opts.dataset, TTFB: opts.ttfb, ConnRate: rate}
	if !opts.plainHTTP {
		eo.TLS = &s3emu.TLSOptions{Key: s3emu.KeyRSA} // as S3's certificates
	}
	emu, err := s3emu.New(eo)
	if err != nil {
		return nil, usageErrorf("--dataset %q: %v", opts.dataset, err)
	}
	stop = func() { emu.Close() }
	if emu.TLS() {
		ca, err := trustEmulator(emu)
		if err != nil {
			return nil, err
		}
		stop = func() { emu.Close(); os.Remove(ca) }
		// The emulator is the only server of the run: its certificate is
		// the one authority to trust, whatever ca_bundle said.
		settings.CABundle = ca
	}
	// Compute the dataset's ETags and checksums before the clock runs.
	if err := emu.Prepare(ctx); err != nil {
		stop()
		return nil, fmt.Errorf("prepare emulator: %w", err)
	}
	endpoint, err := emu.Start("127.0.0.1:0")
	if err != nil {
		stop()
		return nil, fmt.Errorf("start emulator: %w", err)
	}
	settings.EndpointURL, settings.NoSignRequest = endpoint, true
	if settings.Region == "" {
		settings.Region = "us-east-1"
	}
	if w := out.textOut(f.Factory); w != nil {
		over := "plain HTTP (in-process)"
		if emu.TLS() {
			over = "HTTPS (self-signed, in-process)"
		}
		fmt.Fprintf(w, "emulator: %s over %s, dataset %s, ttfb %s, %s/s per connection\n", endpoint, over, opts.dataset, opts.ttfb, opts.connRate)
	}
	return stop, nil
}

// trustEmulator writes the emulator's self-signed certificate to a
// temporary file, for the clients' CA bundle, and returns its path.
func trustEmulator(emu *s3emu.Server) (string, error) {
	tmp, err := os.CreateTemp("", "s3pd-bench-ca-*.pem")
	if err != nil {
		return "", fmt.Errorf("emulator certificate: %w", err)
	}
	tmp.Close()
	if err := emu.WriteCertificate(tmp.Name()); err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("emulator certificate: %w", err)
	}
	return tmp.Name(), nil
}
