package cmd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/s3pd/s3pd/pkg/config"
	"github.com/s3pd/s3pd/pkg/s3emu"
)

type benchServeOptions struct {
	listen   string
	dataset  string
	backend  string
	buckets  []string
	ttfb     time.Duration
	connRate string
	faults   string
	prepare  bool
	throttle s3emu.Throttle
	stalls   s3emu.Stalls
	// allowRemote: --allow-remote, to listen beyond loopback
	allowRemote bool
}

// NewCmdBenchServe builds `s3pd bench serve`: the S3 emulator, standalone.
// runF, when set, runs instead of runBenchServe with the parsed options.
func NewCmdBenchServe(f *Factory, runF func(context.Context, *benchServeOptions) error) *cobra.Command {
	opts := &benchServeOptions{}
	c := &cobra.Command{
		Use:   "serve [flags]",
		Short: "Run the S3 emulator standalone",
		Long: `Serve bucket "bench" from the embedded S3 emulator until interrupted.

The synthetic backend generates a dataset on the fly: --dataset NAME:COUNT:SIZE,...
makes COUNT objects of SIZE bytes named NAME/00000000, NAME/00000001, ...
with deterministic content. The memory backend keeps uploads in RAM; the
discard backend keeps only their size, ETag and checksum. --ttfb and
--conn-rate model S3's latency and per-connection pace (default: none).
--faults FILE injects scripted faults; --max-in-flight and --prefix-rate
answer 503 SlowDown as S3 does; --stall-fraction stalls a seeded share of
GETs mid-body (see docs/EMULATOR.md).`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErrorf("bench serve takes no arguments, got %q", args)
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return runBenchServe(c.Context(), f, opts)
		},
	}
	fs := c.Flags()
	fs.StringVar(&opts.listen, "listen", "127.0.0.1:9000", "address to listen on (port 0 picks a free port)")
	fs.StringVar(&opts.dataset, "dataset", defaultBenchDataset, "synthetic dataset (NAME:COUNT:SIZE,...; KB, MB, GB are powers of 1024)")
	fs.StringVar(&opts.backend, "backend", s3emu.BackendSynthetic, "synthetic, memory or discard")
	fs.StringSliceVar(&opts.buckets, "bucket", nil, "extra bucket to create (repeatable)")
	nonNegativeDurationVar(fs, &opts.ttfb, "ttfb", 0, "delay before each response")
	fs.StringVar(&opts.connRate, "conn-rate", "0", "bytes per second per connection: 90MB/s or 90MB (MB = MiB, as every size here), 720Mb/s in bits (0: no cap)")
	fs.StringVar(&opts.faults, "faults", "", "file of fault rules to inject (text or JSON)")
	fs.BoolVar(&opts.prepare, "prepare", false, "compute every synthetic ETag and checksum before serving")
	fs.IntVar(&opts.throttle.MaxInFlight, "max-in-flight", 0, "answer 503 SlowDown to requests above this many in flight (0: no limit)")
	fs.IntVar(&opts.throttle.PrefixRate, "prefix-rate", 0, "answer 503 SlowDown above this many GET/HEAD per second per prefix (0: no limit; S3: 5500)")
	fs.Float64Var(&opts.stalls.Fraction, "stall-fraction", 0, "stall this fraction of GETs (0 to 1) mid-body, the first attempt of each key and range")
	nonNegativeDurationVar(fs, &opts.stalls.For, "stall-for", 5*time.Second, "how long a stalled GET sends nothing")
	fs.Uint64Var(&opts.stalls.Seed, "stall-seed", 1, "seed of the hash that picks the stalled GETs")
	fs.BoolVar(&opts.allowRemote, "allow-remote", false, "listen on an address other hosts can reach (every bucket is served without authentication, and the buckets in memory are writable by anyone)")
	return c
}

func runBenchServe(ctx context.Context, f *Factory, opts *benchServeOptions) error {
	rate, err := parseConnRate(opts.connRate)
	if err != nil {
		return usageErrorf("--conn-rate: %v", err)
	}
	if opts.ttfb < 0 {
		return usageErrorf("--ttfb must not be negative")
	}
	remote, err := reachableBeyondLoopback(opts.listen)
	if err != nil {
		return usageErrorf("--listen %s: %v", opts.listen, err)
	}
	if remote && !opts.allowRemote {
		return usageErrorf("--listen %s can be reached from other hosts, and the emulator checks no credentials: give --allow-remote to serve there anyway, or listen on 127.0.0.1", opts.listen)
	}
	eo := s3emu.Options{Backend: opts.backend, Buckets: opts.buckets, TTFB: opts.ttfb, ConnRate: rate,
		Throttle: opts.throttle, Stalls: opts.stalls}
	if opts.backend == s3emu.BackendSynthetic || opts.backend == "" {
		eo.Dataset = opts.dataset
	}
	if opts.faults != "" {
		text, err := os.ReadFile(opts.faults)
		if err != nil {
			return usageErrorf("--faults: %v", err)
		}
		if eo.Faults, err = s3emu.ParseFaults(string(text)); err != nil {
			return usageErrorf("--faults %s: %v", opts.faults, err)
		}
	}
	emu, err := s3emu.New(eo)
	if err != nil {
		return usageError(err)
	}
	if opts.prepare {
		if err := emu.Prepare(ctx); err != nil {
			return err
		}
	}
	endpoint, err := emu.Start(opts.listen)
	if err != nil {
		// A port in use or an address not here: fix --listen.
		return usageErrorf("--listen %s: %v", opts.listen, errors.Unwrap(err))
	}
	defer emu.Close()
	if remote {
		writable := "the buckets other than " + s3emu.DefaultBucket + " (--bucket) live in memory and are writable"
		if opts.backend == s3emu.BackendMemory || opts.backend == s3emu.BackendDiscard {
			writable = "every bucket is writable (the " + opts.backend + " backend)"
		}
		fmt.Fprintf(f.IO.ErrOut, "s3pd: warning: --allow-remote: serving at %s to anyone who can reach it: every bucket can be listed and read without authentication, and %s, also deletable, by anyone\n", endpoint, writable)
	}
	out := f.IO.Out
	desc := opts.backend
	if ds := emu.Dataset(); len(ds.Groups) > 0 {
		desc = fmt.Sprintf("%s dataset %s (%d objects, %.2f GiB)", opts.backend, opts.dataset, ds.Objects(), float64(ds.Bytes())/(1<<30))
	}
	fmt.Fprintf(out, "s3pd emulator serving bucket %q at %s: %s\n", s3emu.DefaultBucket, endpoint, desc)
	fmt.Fprintf(out, "  s3pd get s3://%s/ DEST --endpoint-url %s --no-sign-request\n", s3emu.DefaultBucket, endpoint)
	<-ctx.Done()
	st := emu.Stats()
	fmt.Fprintf(out, "served %d requests (%d GET, %d HEAD, %d LIST, %d PUT), sent %d bytes, received %d bytes, at most %d in flight, %d faults injected, %d throttled, %d stalled\n",
		st.Requests, st.GetRequests, st.HeadRequests, st.ListRequests, st.PutRequests, st.BytesSent, st.BytesReceived, st.MaxInFlight, st.FaultsInjected, st.Throttled, st.Stalls)
	return nil
}

// reachableBeyondLoopback reports whether listening at addr (host:port)
// serves other hosts: any host but a loopback address or "localhost"
// (an empty host, 0.0.0.0 and :: are every interface).
func reachableBeyondLoopback(addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, err
	}
	if host == "localhost" {
		return false, nil
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip == nil || !ip.IsLoopback(), nil
}

// parseConnRate reads --conn-rate as every rate setting is read
// (90MB/s, 90MB, 720Mb/s).
func parseConnRate(s string) (int64, error) { return config.ParseRate(s) }
