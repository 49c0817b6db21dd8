package cmd

import (
	"cmp"
	"context"
	"errors"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/s3pd/s3pd/internal/job"
	"github.com/s3pd/s3pd/pkg/config"
	"github.com/s3pd/s3pd/pkg/httpstore"
	"github.com/s3pd/s3pd/pkg/local"
	"github.com/s3pd/s3pd/pkg/s3store"
	"github.com/s3pd/s3pd/pkg/shard"
	"github.com/s3pd/s3pd/pkg/store"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// getOptions are get's own flags; the shared settings come from
// loadSettings.
type getOptions struct {
	// src and dest are the arguments (dest "" with --benchmark).
	src, dest string
	// flags are the command's flags, for the settings they set.
	flags     *pflag.FlagSet
	benchmark bool
	sink      local.Options
	delete    bool
	output    outputFlags
	rules     ruleFlags
	scale     scaleFlags
	req       s3store.Request
	ssec      sseCKeyFlags
	versionID string
	// noSpaceCheck: --no-space-check, no comparison of what is to land
	// with DEST's free space.
	noSpaceCheck bool
	// web is an http(s):// source: its --checksum and --input-file, and
	// what check made of them.
	web webSource
	// fleet is --fleet and its flags; fleetSpec what check made of them
	// (nil without --fleet).
	fleet     fleetFlags
	fleetSpec *job.FleetSpec
}

// outputFlags are the flags every transferring command shares.
type outputFlags struct {
	asJSON, quiet, dryRun bool
	// noProgress: --no-progress, the bar off but the lines kept.
	noProgress bool
	jsonFile   string
	// recursive, onlyErrors, exactTimestamps and pageSize are the AWS
	// CLI's habits (habits.go).
	recursive, onlyErrors bool
	exactTimestamps       bool
	pageSize              int
	verify                string
	stall                 time.Duration
	// adaptive: --adaptive, on or off.
	adaptive string
	// verifyExisting: get --verify-existing.
	verifyExisting bool
	// allowEmpty: --allow-empty, a run that selects nothing succeeds.
	allowEmpty bool
	// report holds bench's and get's --report and --interval.
	report reportFlags
}

// verifyMode parses --verify.
func (o outputFlags) verifyMode() (transfer.Verify, error) {
	switch o.verify {
	case "auto", "":
		return transfer.VerifyAuto, nil
	case "full":
		return transfer.VerifyFull, nil
	case "off":
		return transfer.VerifyOff, nil
	case "require":
		return transfer.VerifyRequire, nil
	}
	return 0, usageErrorf("--verify %q: want auto, full, require or off", o.verify)
}

// adaptiveMode parses --adaptive.
func (o outputFlags) adaptiveMode() (transfer.Adaptive, error) {
	switch o.adaptive {
	case "on", "":
		return transfer.AdaptiveOn, nil
	case "off":
		return transfer.AdaptiveOff, nil
	}
	return 0, usageErrorf("--adaptive %q: want on or off", o.adaptive)
}

func (o *outputFlags) register(fs *pflag.FlagSet) {
	fs.BoolVar(&o.asJSON, "json", false, "print one JSON line per object and a JSON summary on stdout (on stderr when stdout carries the data)")
	fs.StringVar(&o.jsonFile, "json-file", "", "write the same JSON lines to this file")
	fs.BoolVarP(&o.quiet, "quiet", "q", false, "print nothing on success: no progress bar, no lines and no summary (errors and warnings still go to stderr; --json and --json-file are unaffected)")
	fs.BoolVar(&o.dryRun, "dry-run", false, "list what would be transferred, skipped and deleted, and how many bytes; transfer nothing")
	fs.StringVar(&o.verify, "verify", "auto", `what to verify: "auto" checks every full-object CRC64NVME, CRC32C or CRC32 checksum the object has, combined from per-range CRCs at almost no cost; "full" also checks MD5 ETags of single-part objects, which costs about three times the CPU of the transfer itself; "require" checks what "full" does and fails every object no checksum could check, with the reason; "off" checks nothing`)
	positiveDurationVar(fs, &o.stall, "stall-timeout", 30*time.Second, "abandon a connection that delivers nothing for this long and retry its range on a new one")
	fs.StringVar(&o.adaptive, "adaptive", "on", `"on": `+transfer.AdaptiveRule()+`; "off": always max_concurrent_requests`)
	fs.BoolVar(&o.allowEmpty, "allow-empty", false, "succeed when the source, or what --include/--exclude or a pattern select of it, holds no object (else exit 1)")
	o.registerHabits(fs)
}

// NewCmdGet builds `s3pd get`. runF, when set, runs instead of runGet
// with the parsed options (tests).
func NewCmdGet(f *Factory, runF func(context.Context, *getOptions) error) *cobra.Command {
	opts := &getOptions{}
	c := &cobra.Command{
		Use:   "get [flags] s3://bucket[/prefix] DEST | https://host/path DEST | --input-file FILE DIR",
		Short: "Download an object or a prefix from S3",
		Long: `Download an object or every object under a prefix.

s3://b/p names the object p if it exists, else the prefix p/; s3://b/p/ and
s3://b/p/* always name the prefix. A key with "*" or "?" is a pattern over
the prefix before it, matched across "/" like the AWS CLI's --include:
s3://b/m/*.safetensors is --exclude "*" --include "*.safetensors" under m/,
ahead of any --include and --exclude given; --raw takes the key literally. Under a prefix, key p/a/b lands at
DEST/a/b. A single object lands at DEST/<basename> when DEST is an existing
directory or ends in /, else at DEST itself. DEST "-" writes one object to
stdout in order. With --benchmark no DEST is needed: bytes are counted and
dropped.

An http:// or https:// URL is one file, fetched in parallel ranges when
the server takes Range, each pinned to the version first seen (its ETag,
else Last-Modified); --checksum ALG:HEX checks it. --input-file FILE
fetches the URLs FILE lists (one a line, optionally followed by a name)
into the directory DEST.`,
		Args: func(c *cobra.Command, args []string) error {
			if opts.web.inputFile != "" {
				_, err := opts.web.checkArgs(args, opts.benchmark)
				return err
			}
			want := 2
			if opts.benchmark {
				want = 1
			}
			if len(args) < want || len(args) > 2 {
				return usageErrorf("get takes SRC and DEST (SRC alone with --benchmark), got %d argument(s)", len(args))
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			opts.flags = c.Flags()
			if opts.web.inputFile != "" {
				args, _ = opts.web.checkArgs(args, opts.benchmark)
			}
			opts.src, opts.dest = args[0], ""
			if len(args) == 2 {
				opts.dest = args[1]
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return runGet(c.Context(), f, opts)
		},
	}
	opts.registerFlags(c.Flags())
	return c
}

// runGet checks get's flags, loads the settings and builds the logger,
// then downloads.
func runGet(ctx context.Context, fac *Factory, opts *getOptions) (err error) {
	u, spec, err := opts.check(fac)
	if err != nil {
		return err
	}
	if err := opts.output.report.check(opts.dest); err != nil {
		return err
	}
	f, settings, origins, err := startRun(fac, opts.flags, &opts.output, opts.dest == "-")
	defer f.end(&err)
	if err != nil {
		return err
	}
	return download(ctx, f, opts, u, spec, settings, origins)
}

// check checks get's flags against each other and parses the source and
// --shard; they do not depend on the settings.
func (opts *getOptions) check(f *Factory) (s3store.URL, *shard.Spec, error) {
	if opts.web.inputFile != "" || httpstore.IsURL(opts.src) {
		if opts.fleet.fleet != "" {
			return s3store.URL{}, nil, usageErrorf("--fleet shares an S3 prefix among nodes, not files fetched over http(s)://")
		}
		// What the registry takes beside s3:// and local paths.
		return s3store.URL{}, nil, opts.checkWeb(f)
	}
	if opts.web.checksum != "" {
		return s3store.URL{}, nil, usageErrorf("--checksum checks a file fetched from an http(s):// URL; an S3 object is checked by its own checksums (--verify)")
	}
	u, err := opts.rules.parseSource(opts.src)
	if err != nil {
		return u, nil, usageError(err)
	}
	if err := checkModes(opts.output, opts.benchmark, opts.dest); err != nil {
		return u, nil, err
	}
	if err := opts.rules.refuseIncludeAlone(opts.src); err != nil {
		return u, nil, err
	}
	if err := opts.checkKeep(u); err != nil {
		return u, nil, err
	}
	spec, err := opts.scale.spec(f.Getenv)
	if err != nil {
		return u, nil, err
	}
	if err := opts.checkScale(spec); err != nil {
		return u, nil, err
	}
	if opts.fleetSpec, err = opts.checkFleet(f.Getenv, spec); err != nil {
		return u, nil, err
	}
	if opts.req.SSECKey, err = opts.ssec.resolve(f.Getenv); err != nil {
		return u, nil, err
	}
	if opts.req.RequestPayer != "" && opts.req.RequestPayer != "requester" {
		return u, nil, usageErrorf("--request-payer %q: the only value is requester", opts.req.RequestPayer)
	}
	if err := refuseDirectory(u.Bucket, directoryFlags{versionID: opts.versionID, sseC: opts.req.SSECKey, requestPayer: opts.req.RequestPayer}); err != nil {
		return u, nil, err
	}
	return u, spec, nil
}

// checkModes refuses a --verify or --adaptive value that is not one, and
// a DEST beside --benchmark: get and copy alike.
func checkModes(out outputFlags, benchmark bool, dest string) error {
	if _, err := out.verifyMode(); err != nil {
		return err
	}
	if _, err := out.adaptiveMode(); err != nil {
		return err
	}
	if benchmark && dest != "" {
		return usageErrorf("--benchmark keeps nothing: drop DEST %q", dest)
	}
	return nil
}

// checkKeep refuses rules for the files already at DEST, and names, that
// contradict each other.
func (opts *getOptions) checkKeep(u s3store.URL) error {
	switch {
	case opts.sink.Overwrite && opts.sink.NoClobber:
		return usageErrorf("--overwrite and --no-clobber contradict each other")
	case opts.sink.SizeOnly && (opts.sink.Overwrite || opts.output.exactTimestamps):
		return usageErrorf("--size-only keeps files by their size alone: not with --overwrite or --exact-timestamps")
	case opts.output.verifyExisting && (opts.sink.NoClobber || opts.sink.Overwrite):
		return usageErrorf("--verify-existing replaces files that differ from their objects: not with --no-clobber or --overwrite")
	case opts.delete && (opts.benchmark || opts.dest == "-"):
		return usageErrorf("--delete needs a directory DEST")
	case opts.versionID != "" && u.Prefix:
		return usageErrorf("--version-id names one object; %s is a prefix", opts.src)
	case strings.ContainsAny(opts.sink.ConflictSuffix, "/\x00"):
		// "a"+"/../b" would land in another folder, or on another
		// object: a copy's name is its object's name and a suffix, in
		// the same folder.
		return usageErrorf("--conflict-suffix %s: a suffix cannot hold \"/\" (or a \"..\" component) or a NUL byte: the copy of NAME is NAME+SUFFIX, in NAME's folder", printable(opts.sink.ConflictSuffix))
	}
	return nil
}

// checkScale refuses what --shard, --manifest and --list-concurrency
// cannot do together with the other flags.
func (opts *getOptions) checkScale(spec *shard.Spec) error {
	if spec != nil && opts.delete {
		return usageErrorf("--delete with --shard: each process sees only its shard, so it cannot tell what to delete")
	}
	if opts.scale.manifest != "" {
		switch {
		case opts.delete:
			return usageErrorf("--delete with --manifest: a manifest need not name every object, so it cannot tell what to delete")
		case opts.versionID != "":
			return usageErrorf("--version-id with --manifest: the manifest names the objects")
		case opts.dest == "-":
			return usageErrorf("DEST - takes a single object, not a --manifest")
		}
	}
	if opts.scale.fanOut < 0 {
		return usageErrorf("--list-concurrency %d: want 1 or more (0: the default)", opts.scale.fanOut)
	}
	return nil
}

// download builds the job of a get (or of a copy from S3 to local) from
// checked options and loaded settings, runs it, and deletes after it
// with --delete.
func download(ctx context.Context, f *runEnv, opts *getOptions, u s3store.URL, spec *shard.Spec, settings config.Settings, origins *config.Origins) error {
	// The options stay as the flags set them: the run's output and sink
	// settings are copies completed here.
	dest, out, sink := opts.dest, f.output(opts.output), opts.sink
	web := opts.web.items != nil
	shown := opts.src
	if web {
		shown = opts.web.shown(opts.src)
	}
	out.about = reportAbout{origins: origins, command: "get", source: shown, dest: dest,
		lines: opts.flags != nil && opts.flags.Changed("interval")}
	planNICs(f, &settings, out.dryRun)
	settings = opts.web.endpoint(settings)
	client, err := s3Client(ctx, f, settings)
	if err != nil {
		return usageError(err)
	}
	eopts, err := runOptions(settings, out.outputFlags)
	if err != nil {
		return err
	}
	sink.DryRun = out.dryRun
	sink.ResumeMin = settings.MultipartThreshold
	sink.Warn = sinkWarn(f)
	sink.DirectIO, sink.StageSize = directMode(settings.DirectIO), local.StageSize(settings.PartSize, settings.MaxConcurrentRequests)
	sink.RefuseDirect = f.Getenv(envRefuseDirect) == "1"
	if opts.benchmark {
		dest = ""
	}
	base := storeOptions{s3: s3store.OpenerOptions{Client: client, Req: opts.req}, localDest: sink}
	source, reg, origin := s3Location(u), stores(base), s3Origin(u.Bucket)
	if web {
		source, reg, origin = opts.web.items[0].URL, opts.web.stores(base), webOrigin
		out.noChecksumHint = "pass --checksum ALG:HEX (sha256, md5, crc32c) to have it checked"
	}
	get := &job.GetSpec{
		Source: source, Stores: reg, URL: shown,
		Read: store.Options{Prefix: u.Prefix, FirstRange: settings.PartSize, FanOut: cmp.Or(opts.scale.fanOut, defaultFanOut),
			Version: opts.versionID, Verify: eopts.Verify != transfer.VerifyOff, StallTimeout: out.stall, OnRetry: f.logListRetry},
		Dest: dest, Stdout: f.IO.Out,
		// The reorder window holds --threads parts (8 without a cap):
		// the engine starts no range beyond it.
		OrderWindow: int(settings.PartSize)*cmp.Or(settings.Threads, config.BudgetThreads) + 1<<20,
		Delete:      opts.delete, Scale: opts.scale.scaleSpec(f, settings, f.net.t, spec, opts.rules.rules),
	}
	if opts.fleetSpec != nil {
		fl := *opts.fleetSpec
		fl.Lingering = fleetLingering(f, opts.output.quiet || opts.output.onlyErrors)
		get.Fleet = &fl
	}
	return runJob(ctx, f, job.Spec{Get: get, Engine: eopts, Bandwidth: settings.MaxBandwidth, SpaceCheck: !opts.noSpaceCheck},
		jobRun{settings: settings, out: out, rules: opts.rules.rules, verb: "download", origin: origin, source: shown})
}

// jobError reports an error of building a job: a usage error when the
// spec cannot run, else what startError says.
func jobError(ctx context.Context, err error) error {
	var se *job.SpecError
	if errors.As(err, &se) {
		return usageError(se.Err)
	}
	return startError(ctx, err)
}

// envRefuseDirect, set to 1, makes a local destination act as if its
// file system refused O_DIRECT: the tests of the fallback set it (tmpfs
// and the usual disks all take O_DIRECT).
const envRefuseDirect = "S3PD_TEST_REFUSE_DIRECT_IO"

// directMode turns the direct_io setting into the local sink's mode.
func directMode(v string) local.DirectMode {
	switch v {
	case config.DirectIOOn:
		return local.DirectOn
	case config.DirectIOAuto:
		return local.DirectAuto
	}
	return local.DirectOff
}

// sinkWarn logs what a local sink warns of.
func sinkWarn(f *runEnv) func(string) {
	return func(msg string) { f.Logger.Warn(printableText(msg)) }
}

// startError reports an error before anything was transferred: a missing
// bucket, no credentials, access denied. It is a configuration error.
func startError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return &ExitError{Code: ExitInterrupted}
	}
	if code, _ := errorCode(err); code == codeNetwork {
		// The endpoint could not be reached: not a usage error.
		return &ExitError{Code: ExitFailed, Err: err}
	}
	var bad *transfer.BadResponseError
	var short *transfer.ShortBodyError
	status, _, answered := statusOf(err)
	var web *httpstore.StatusError
	if errors.As(err, &web) && (web.Retriable() || errors.Is(err, transfer.ErrNotFound)) {
		// A web server that failed, or has no such file (as a missing
		// S3 key fails its object): not a usage error.
		return &ExitError{Code: ExitFailed, Err: err}
	}
	if errors.As(err, &bad) || errors.As(err, &short) || answered && status >= 500 {
		// The server answered wrongly or failed (a single object's
		// probe, a first listing page): its fault, not a usage error.
		return &ExitError{Code: ExitFailed, Err: err}
	}
	return usageError(err)
}

// engineOptions turns validated settings into the engine's options.
func engineOptions(s config.Settings) transfer.Options {
	return transfer.Options{
		Workers:     s.Workers,
		Threads:     s.Threads,
		MaxRequests: s.MaxConcurrentRequests,
		PartSize:    s.PartSize,
		Threshold:   s.MultipartThreshold,
		QueueSize:   s.MaxQueueSize,
	}
}

// runOptions are the engine's options of a run: the settings', and
// those of the output flags.
func runOptions(s config.Settings, out outputFlags) (transfer.Options, error) {
	o := engineOptions(s)
	var err error
	if o.Verify, err = out.verifyMode(); err != nil {
		return o, err
	}
	if o.Adaptive, err = out.adaptiveMode(); err != nil {
		return o, err
	}
	o.StallTimeout, o.DryRun, o.VerifyExisting = out.stall, out.dryRun, out.verifyExisting
	return o, nil
}
