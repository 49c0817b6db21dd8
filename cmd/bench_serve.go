package cmd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
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
	tls      bool
	tlsCert  string
	tlsKey   string
	tlsKeyAs string
	caOut    string
	// sessionLifetime is how long a directory bucket's sessions live.
	sessionLifetime time.Duration
	// allowRemote: --allow-remote, to listen beyond loopback and serve
	// any Host
	allowRemote bool
	// corsOrigins: --cors-origin, the web origins whose pages may reach it
	corsOrigins []string
	// minPartSize: --min-part-size, the smallest part but the last
	minPartSize string
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
GETs mid-body (see docs/EMULATOR.md). A --bucket named BASE--ZONEID--x-s3
is a directory bucket (S3 Express One Zone): CreateSession, s3express
signatures checked, sessions living --session-lifetime (docs/DIRECTORY-BUCKETS.md).

It serves only this machine: requests whose Host is not a loopback
address or localhost are refused, and so are browser form uploads and
CORS requests, unless --allow-remote (any host) or --cors-origin ORIGIN
(a web page at ORIGIN may reach it) says otherwise.

--tls serves HTTPS (HTTP/1.1 only, as S3) with a self-signed certificate
for 127.0.0.1 and localhost, written to --ca-out (a temporary file
removed at exit by default) and named in the --ca-bundle line printed
to paste; --tls-cert and --tls-key serve a certificate of your own.`,
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
	fs.BoolVar(&opts.tls, "tls", false, "serve HTTPS (HTTP/1.1), with a self-signed certificate unless --tls-cert")
	fs.StringVar(&opts.tlsCert, "tls-cert", "", "PEM certificate (chain) to serve HTTPS with (implies --tls; needs --tls-key)")
	fs.StringVar(&opts.tlsKey, "tls-key", "", "PEM private key of --tls-cert")
	fs.StringVar(&opts.tlsKeyAs, "tls-key-type", s3emu.KeyRSA, "key of the self-signed certificate: rsa (2048 bits, as S3's) or ecdsa (P-256)")
	nonNegativeDurationVar(fs, &opts.sessionLifetime, "session-lifetime", s3emu.DefaultSessionLifetime, "how long a directory bucket's session credentials live")
	fs.StringVar(&opts.caOut, "ca-out", "", "write the self-signed certificate here, kept at exit (default: a temporary file removed at exit)")
	fs.BoolVar(&opts.allowRemote, "allow-remote", false, "listen on an address other hosts can reach and serve any Host name (every bucket is served without authentication, and the buckets in memory are writable by anyone)")
	fs.StringArrayVar(&opts.corsOrigins, "cors-origin", nil, "web origin (scheme://host[:port], or *) whose pages may reach the emulator through CORS (repeatable)")
	fs.StringVar(&opts.minPartSize, "min-part-size", "5MiB", "answer EntityTooSmall to a multipart upload whose parts but the last are smaller, as S3 (0: any size)")
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
	minPart, err := s3emu.ParseSize(opts.minPartSize)
	if err != nil {
		return usageErrorf("--min-part-size %q: %v", opts.minPartSize, err)
	}
	for _, o := range opts.corsOrigins {
		if err := checkOrigin(o); err != nil {
			return usageErrorf("--cors-origin %q: %v", o, err)
		}
	}
	eo := s3emu.Options{Backend: opts.backend, Buckets: opts.buckets, TTFB: opts.ttfb, ConnRate: rate,
		Throttle: opts.throttle, Stalls: opts.stalls, SessionLifetime: opts.sessionLifetime,
		AllowRemote: opts.allowRemote, CORSOrigins: opts.corsOrigins, MinPartSize: minPart}
	if eo.TLS, err = opts.tlsOptions(); err != nil {
		return err
	}
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
	if len(opts.corsOrigins) > 0 {
		fmt.Fprintf(f.IO.ErrOut, "s3pd: warning: --cors-origin: web pages at %s can list, read, write and delete objects here\n", strings.Join(opts.corsOrigins, ", "))
	}
	caFlag, cleanup, err := opts.writeCA(emu)
	if err != nil {
		return err
	}
	defer cleanup()
	out := f.IO.Out
	desc := opts.backend
	if ds := emu.Dataset(); len(ds.Groups) > 0 {
		desc = fmt.Sprintf("%s dataset %s (%s, %.2f GiB)", opts.backend, opts.dataset, plural(ds.Objects(), "object"), float64(ds.Bytes())/(1<<30))
	}
	served := fmt.Sprintf("bucket %q", s3emu.DefaultBucket)
	if len(opts.buckets) > 0 {
		quoted := []string{strconv.Quote(s3emu.DefaultBucket)}
		for _, b := range opts.buckets {
			quoted = append(quoted, strconv.Quote(b))
		}
		served = "buckets " + strings.Join(quoted, ", ")
	}
	fmt.Fprintf(out, "s3pd emulator serving %s at %s: %s\n", served, endpoint, desc)
	fmt.Fprintf(out, "  s3pd get s3://%s/ DEST --endpoint-url %s --no-sign-request%s\n", s3emu.DefaultBucket, endpoint, caFlag)
	<-ctx.Done()
	st := emu.Stats()
	fmt.Fprintf(out, "served %d requests (%d GET, %d HEAD, %d LIST, %d PUT), sent %d bytes, received %d bytes, at most %d in flight, %d faults injected, %d throttled, %d stalled\n",
		st.Requests, st.GetRequests, st.HeadRequests, st.ListRequests, st.PutRequests, st.BytesSent, st.BytesReceived, st.MaxInFlight, st.FaultsInjected, st.Throttled, st.Stalls)
	if emu.TLS() {
		fmt.Fprintf(out, "TLS: %d handshakes (%d resumed, %d failed); of the %d after the first completed, %d resumed\n",
			st.TLSHandshakes, st.TLSResumed, st.TLSHandshakeErrors, st.TLSHandshakesAfterFirst, st.TLSResumedAfterFirst)
	}
	return nil
}

// tlsOptions reads --tls, --tls-cert, --tls-key, --tls-key-type and
// --ca-out (nil: plain HTTP).
func (opts *benchServeOptions) tlsOptions() (*s3emu.TLSOptions, error) {
	own := opts.tlsCert != "" || opts.tlsKey != ""
	switch {
	case (opts.tlsCert == "") != (opts.tlsKey == ""):
		return nil, usageErrorf("--tls-cert and --tls-key go together")
	case !opts.tls && !own:
		if opts.caOut != "" {
			return nil, usageErrorf("--ca-out needs --tls")
		}
		return nil, nil
	case own && opts.caOut != "":
		return nil, usageErrorf("--ca-out is for the self-signed certificate, not --tls-cert's")
	case opts.tlsKeyAs != s3emu.KeyRSA && opts.tlsKeyAs != s3emu.KeyECDSA:
		return nil, usageErrorf("--tls-key-type %q: want rsa or ecdsa", opts.tlsKeyAs)
	}
	return &s3emu.TLSOptions{CertFile: opts.tlsCert, KeyFile: opts.tlsKey, Key: opts.tlsKeyAs}, nil
}

// writeCA writes a self-signed certificate where --ca-out says (or to a
// temporary file that cleanup removes) and returns the --ca-bundle flag
// a client needs: none for plain HTTP, the user's own certificate file
// when it is self-signed, and none when an authority signed it (the
// client trusts that authority already, or is told to by its user).
func (opts *benchServeOptions) writeCA(emu *s3emu.Server) (flag string, cleanup func(), err error) {
	cleanup = func() {}
	switch {
	case !emu.TLS():
		return "", cleanup, nil
	case opts.tlsCert != "":
		if emu.SelfSigned() {
			return " --ca-bundle " + opts.tlsCert, cleanup, nil
		}
		return "", cleanup, nil
	}
	path := opts.caOut
	if path == "" {
		tmp, err := os.CreateTemp("", "s3pd-emulator-*.pem")
		if err != nil {
			return "", nil, fmt.Errorf("bench serve: certificate file: %w", err)
		}
		tmp.Close()
		path = tmp.Name()
		cleanup = func() { os.Remove(path) }
	}
	if err := emu.WriteCertificate(path); err != nil {
		cleanup()
		if opts.caOut != "" {
			return "", nil, usageErrorf("--ca-out: %v", err)
		}
		return "", nil, fmt.Errorf("bench serve: %w", err)
	}
	return " --ca-bundle " + path, cleanup, nil
}

// parseConnRate reads --conn-rate as every rate setting is read
// (90MB/s, 90MB, 720Mb/s).
func parseConnRate(s string) (int64, error) { return config.ParseRate(s) }

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

// checkOrigin checks a --cors-origin: "*" or scheme://host[:port], as a
// browser sends it in Origin (no path, no trailing slash).
func checkOrigin(o string) error {
	if o == "*" {
		return nil
	}
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.User != nil {
		return errors.New("want scheme://host[:port] as a browser sends it, e.g. http://localhost:3000, or *")
	}
	return nil
}
