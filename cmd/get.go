package cmd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/s3pd/s3pd/pkg/config"
	"github.com/s3pd/s3pd/pkg/local"
	"github.com/s3pd/s3pd/pkg/s3store"
	"github.com/s3pd/s3pd/pkg/shard"
	"github.com/s3pd/s3pd/pkg/sink"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// getOptions are get's own flags; the shared settings come from
// loadSettings.
type getOptions struct {
	benchmark bool
	sink      local.Options
	delete    bool
	output    outputFlags
	rules     ruleFlags
	scale     scaleFlags
	req       s3store.Request
	ssec      sseCKeyFlags
	versionID string
}

// outputFlags are the flags every transferring command shares.
type outputFlags struct {
	asJSON, quiet, dryRun bool
	jsonFile              string
	// recursive and onlyErrors are the AWS CLI's habits (habits.go).
	recursive, onlyErrors bool
	verify                string
	stall                 time.Duration
	// adaptive: --adaptive, on or off.
	adaptive string
	// verifyExisting: get --verify-existing.
	verifyExisting bool
	// route is where lines go, set by openRoute; nil means stdout.
	route *route
	// logJSON: --log-format json, so stderr carries JSON lines only
	logJSON bool
	// mustExist, when set, is the object a run must find: finding
	// nothing is one failed object, whose error is missing.
	mustExist *transfer.Object
	missing   error
	// embedded says the S3 server runs in this process (bench without a
	// URL), so its memory is in the peak this process reports.
	embedded bool
	// report holds bench's and get's --report and --interval.
	report reportFlags
	// localTo says where a copy from local files goes ("local" or "s3"),
	// "" when the source is S3: local files carry no checksum, so the
	// summary's advice on unverified objects fits the direction.
	localTo string
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
	}
	return 0, usageErrorf("--verify %q: want auto, full or off", o.verify)
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
	fs.BoolVarP(&o.quiet, "quiet", "q", false, "no progress bar")
	fs.BoolVar(&o.dryRun, "dry-run", false, "list what would be transferred, skipped and deleted, and how many bytes; transfer nothing")
	fs.StringVar(&o.verify, "verify", "auto", `what to verify: "auto" checks every full-object CRC64NVME, CRC32C or CRC32 checksum the object has, combined from per-range CRCs at almost no cost; "full" also checks MD5 ETags of single-part objects, which costs about three times the CPU of the transfer itself; "off" checks nothing`)
	positiveDurationVar(fs, &o.stall, "stall-timeout", 30*time.Second, "abandon a connection that delivers nothing for this long and retry its range on a new one")
	fs.StringVar(&o.adaptive, "adaptive", "on", `"on": the requests in flight start at 32, grow to max_concurrent_requests and back off when the server answers SlowDown; "off": always max_concurrent_requests`)
	o.registerHabits(fs)
}

// NewCmdGet builds `s3pd get`.
func NewCmdGet(f *Factory) *cobra.Command {
	opts := &getOptions{}
	c := &cobra.Command{
		Use:   "get [flags] s3://bucket[/prefix] DEST",
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
dropped.`,
		Args: func(c *cobra.Command, args []string) error {
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
			return runGet(c.Context(), f, c.Flags(), opts, args)
		},
	}
	fs := c.Flags()
	addSettingsFlags(fs)
	opts.output.register(fs)
	opts.output.report.register(fs)
	opts.rules.register(fs)
	opts.scale.register(fs)
	registerTLSFlags(fs, &f.TLS)
	fs.BoolVar(&opts.benchmark, "benchmark", false, "keep nothing: count and drop the bytes (no DEST needed)")
	fs.BoolVar(&opts.sink.Overwrite, "overwrite", false, "replace files even when they are complete and unchanged")
	fs.BoolVar(&opts.sink.NoClobber, "no-clobber", false, "never replace an existing file, even one that appears during the run")
	fs.StringVar(&opts.sink.ConflictSuffix, "conflict-suffix", "", `when a key is both an object and a prefix ("a" and "a/b"), save the object as "a"+SUFFIX instead of failing it; keys that end in SUFFIX are refused`)
	fs.BoolVar(&opts.output.verifyExisting, "verify-existing", false, "read files that look unchanged (size and mtime) and compare them with the objects' checksums (CRC64NVME, CRC32C, CRC32, else an MD5 ETag), fetching again those that differ: repairs damaged files without deleting DEST (rclone's --checksum compares so too)")
	fs.BoolVar(&opts.sink.NoResume, "no-resume", false, "start partial files of interrupted runs over instead of resuming them")
	fs.BoolVar(&opts.sink.NoLock, "no-lock", false, "do not lock DEST (for file systems that refuse locks): you promise no other run writes there")
	fs.BoolVar(&opts.delete, "delete", false, "remove local files under DEST whose keys no longer exist (after a run without failures)")
	fs.StringVar(&opts.req.RequestPayer, "request-payer", "", `confirm that the requester pays ("requester")`)
	fs.StringVar(&opts.req.ExpectedBucketOwner, "expected-bucket-owner", "", "account ID the bucket must belong to")
	opts.ssec.register(fs)
	fs.StringVar(&opts.versionID, "version-id", "", "version of a single object")
	return c
}

func runGet(ctx context.Context, f *Factory, fs *pflag.FlagSet, opts *getOptions, args []string) error {
	u, err := opts.rules.parseSource(args[0])
	if err != nil {
		return usageError(err)
	}
	dest := ""
	if len(args) == 2 {
		dest = args[1]
	}
	if opts.benchmark && dest != "" {
		return usageErrorf("--benchmark keeps nothing: drop DEST %q", dest)
	}
	if opts.sink.Overwrite && opts.sink.NoClobber {
		return usageErrorf("--overwrite and --no-clobber contradict each other")
	}
	if opts.output.verifyExisting && (opts.sink.NoClobber || opts.sink.Overwrite) {
		return usageErrorf("--verify-existing replaces files that differ from their objects: not with --no-clobber or --overwrite")
	}
	if opts.delete && (opts.benchmark || dest == "-") {
		return usageErrorf("--delete needs a directory DEST")
	}
	if opts.versionID != "" && u.Prefix {
		return usageErrorf("--version-id names one object; %s is a prefix", args[0])
	}
	spec, err := opts.scale.spec(f.Getenv)
	if err != nil {
		return err
	}
	opts.sink.LockID = shardLockID(spec)
	if spec != nil && opts.delete {
		return usageErrorf("--delete with --shard: each process sees only its shard, so it cannot tell what to delete")
	}
	if opts.scale.manifest != "" {
		switch {
		case opts.delete:
			return usageErrorf("--delete with --manifest: a manifest need not name every object, so it cannot tell what to delete")
		case opts.versionID != "":
			return usageErrorf("--version-id with --manifest: the manifest names the objects")
		case dest == "-":
			return usageErrorf("DEST - takes a single object, not a --manifest")
		}
		u.Key, u.Prefix = manifestPrefix(u.Key), true
	}
	if opts.scale.fanOut < 0 {
		return usageErrorf("--list-concurrency %d: want 1 or more (0: the default)", opts.scale.fanOut)
	}
	if opts.req.SSECKey, err = opts.ssec.resolve(f.Getenv); err != nil {
		return err
	}
	if opts.req.RequestPayer != "" && opts.req.RequestPayer != "requester" {
		return usageErrorf("--request-payer %q: the only value is requester", opts.req.RequestPayer)
	}
	if opts.output.route == nil {
		if err := opts.output.openRoute(f, dest == "-"); err != nil {
			return err
		}
	}
	if err := opts.output.report.check(dest); err != nil {
		return err
	}
	settings, origins, err := loadSettings(f, fs)
	if err != nil {
		return err
	}
	opts.output.report.origins = origins
	opts.output.report.command, opts.output.report.source, opts.output.report.dest = "get", args[0], dest
	opts.output.report.lines = fs.Changed("interval")
	if err := f.startLogger(settings); err != nil {
		return err
	}
	if dest != "" && dest != "-" {
		if err := checkWritable(dest); err != nil {
			return usageError(err)
		}
	}

	planNICs(f, &settings, opts.output.dryRun)
	clients, err := newS3Lanes(ctx, f, settings, u.Bucket)
	if err != nil {
		return usageError(err)
	}
	verify, err := opts.output.verifyMode()
	if err != nil {
		return err
	}
	target := s3store.Target{Bucket: u.Bucket, Version: opts.versionID, Req: opts.req,
		Verify: verify != transfer.VerifyOff, StallTimeout: opts.output.stall, OnRetry: f.logListRetry}

	var sk transfer.Sink
	switch {
	case opts.benchmark:
		sk = sink.Discard{}
	case dest == "-":
		// The reorder window holds --threads parts (8 without a cap):
		// the engine starts no range beyond it.
		sk = sink.NewOrdered(f.IO.Out, int(settings.PartSize)*cmp.Or(settings.Threads, 8)+1<<20)
	}
	root, name := dest, ""
	single := false
	var prefetch *transfer.Prefetch
	if !u.Prefix {
		name = filepath.Base(u.Key)
		if dest != "" && dest != "-" && !isDirDest(dest) {
			root, name = filepath.Dir(dest), filepath.Base(dest)
		}
		obj, first, err := clients[0].base.With(target).Probe(ctx, u.Key, name, settings.PartSize)
		switch {
		case err == nil:
			single, target.Object = true, &obj
			prefetch = transfer.NewPrefetch(obj.Key, first)
			defer prefetch.Close()
		case errors.Is(err, transfer.ErrNotFound) && opts.versionID == "":
			u.Key += "/"
			root = dest
		default:
			return startError(ctx, err)
		}
	}
	if single && spec != nil {
		return usageErrorf("--shard splits a prefix; %s is a single object", args[0])
	}
	if !single {
		if dest == "-" {
			return usageErrorf("DEST - takes a single object; %s is a prefix", args[0])
		}
		target.Prefix, target.FanOut = u.Key, cmp.Or(opts.scale.fanOut, defaultFanOut)
	}
	lanes := sourceLanes(clients, target)
	src := lanes[0].Source.(*s3store.Source)
	if prefetch != nil {
		lanes = prefetch.Lanes(lanes)
	}
	var ls *local.Sink
	opts.sink.DryRun = opts.output.dryRun
	opts.sink.ResumeMin = settings.MultipartThreshold
	opts.sink.Warn = sinkWarn(f)
	if single {
		// One object locks only its own name: downloads of different
		// objects into one directory run together.
		opts.sink.LockID = local.ObjectLockID(name)
	}
	if sk == nil {
		if ls, err = local.NewSink(root, opts.sink); err != nil {
			return usageError(err)
		}
		defer ls.Close()
		sk = ls
	}
	var listed *listedNames
	var listing transfer.ListObserver
	if opts.delete && !single {
		listed = newListedNames()
		listing = listed
	}
	if !u.Prefix && !single {
		// s3://b/p named neither an object nor a prefix: a typo must
		// not look like success; it is one failed object.
		opts.output.mustExist = &transfer.Object{Key: strings.TrimSuffix(u.Key, "/"), Name: name, Size: -1}
		opts.output.missing = &s3store.StatusError{Status: 404, Code: "NoSuchKey",
			Message: fmt.Sprintf("%s: no object %q and nothing under %q", args[0], strings.TrimSuffix(u.Key, "/"), u.Key)}
	}
	sc := &scaleRun{}
	if opts.scale.manifest != "" {
		sc.readManifest(f, settings, opts.scale.manifest, u.Bucket, u.Key, src)
	}
	sc.split(src, spec, opts.rules.rules)
	err = runEngineObserved(ctx, f, lanes, sk, settings, opts.output, opts.rules.rules, false, nil, listing, sc)
	if listed == nil || err != nil {
		return err
	}
	if !listed.complete.Load() {
		return &ExitError{Code: ExitFailed, Err: errors.New("--delete: the listing did not complete: nothing deleted")}
	}
	return prune(f, ls, listed, opts.rules.rules, opts.output)
}

// sinkWarn logs what a local sink warns of.
func sinkWarn(f *Factory) func(string) {
	return func(msg string) { f.Logger.Warn(msg) }
}

// prune removes local files whose keys no longer exist, leaving alone
// names that the include/exclude rules keep out of the transfer.
func prune(f *Factory, ls *local.Sink, listed *listedNames, rules transfer.Rules, out outputFlags) error {
	return reportDeletes(f, out, "files", func(report func(string, int64)) error {
		return ls.Prune(func(name string) bool {
			return rules.Match(name) && !listed.has(name)
		}, out.dryRun, report)
	})
}

// reportDeletes runs remove, which calls report for each file or object
// it deletes (or would delete), and renders them: a JSON line each, a
// line each in a dry run, and a total.
func reportDeletes(f *Factory, out outputFlags, what string, remove func(report func(name string, size int64)) error) error {
	var n, bytes int64
	err := remove(func(name string, size int64) {
		n++
		bytes += size
		if js := out.jsonOut(f); js != nil {
			writeJSONLine(js, deleteLine{header: newHeader(lineDelete), Name: name, Bytes: size, DryRun: out.dryRun})
		}
		if out.dryRun && !out.asJSON {
			fmt.Fprintf(out.humanOut(f), "would delete: %s (%d bytes)\n", printable(name), size)
		}
	})
	if !out.asJSON && n > 0 {
		verb := "deleted"
		if out.dryRun {
			verb = "would delete"
		}
		fmt.Fprintf(out.humanOut(f), "%s: %d %s, %d bytes\n", verb, n, what, bytes)
	}
	if err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	return nil
}

// runEngine runs one transfer and renders its outcome.
func runEngine(ctx context.Context, f *Factory, lanes []transfer.Lane, sk transfer.Sink, settings config.Settings, out outputFlags, rules transfer.Rules, latency bool) error {
	return runEngineObserved(ctx, f, lanes, sk, settings, out, rules, latency, nil, nil, nil)
}

// runEngineObserved is runEngine with one more observer of the events
// and of the listing, and what --shard and --manifest change (any of
// them may be nil).
func runEngineObserved(ctx context.Context, f *Factory, lanes []transfer.Lane, sk transfer.Sink, settings config.Settings, out outputFlags, rules transfer.Rules, latency bool, extra transfer.Observer, listing transfer.ListObserver, sc *scaleRun) (runErr error) {
	verify, err := out.verifyMode()
	if err != nil {
		return err
	}
	adaptive, err := out.adaptiveMode()
	if err != nil {
		return err
	}
	out.logJSON = f.LogJSON
	f.JSON = out.jsonOut(f)
	total := &listedBytes{}
	rep := newReporter(f, f.Logger, out, total)
	if d, ok := sk.(interface{ Destination(string) string }); ok {
		rep.destination = d.Destination
	}
	eopts := engineOptions(settings)
	eopts.Verify = verify
	eopts.StallTimeout = out.stall
	eopts.Adaptive = adaptive
	eopts.Observer = rep
	if extra != nil {
		eopts.Observer = transfer.Observers{rep, extra}
	}
	eopts.Filter = rules.Filter()
	eopts.DryRun = out.dryRun
	eopts.VerifyExisting = out.verifyExisting
	eopts.Listing = total
	if listing != nil {
		eopts.Listing = listings{total, listing}
	}
	var shardReport *shard.Report
	if sc != nil {
		eopts.Lister, shardReport = sc.lister, sc.report
	}
	meas := newMeasurement(f, rep, lanes, settings, out)
	eopts.OnSample, eopts.SampleEvery = meas.sample, meas.flags.interval
	eng, err := transfer.New(lanes, sk, eopts)
	if err != nil {
		return err
	}
	defer func() { runErr = meas.finish(ctx, runErr) }()
	sum, err := eng.Run(ctx)
	rep.close()
	meas.ended(sum)
	if err != nil && ctx.Err() == nil && sum.Objects+sum.Failed+sum.Skipped == 0 && !errors.Is(err, s3store.ErrBadListing) {
		return startError(ctx, err)
	}
	if out.mustExist != nil && err == nil && ctx.Err() == nil && sum.Objects+sum.Failed+sum.Skipped == 0 {
		rep.ObjectDone(transfer.Result{Object: *out.mustExist, Err: out.missing})
		sum.Failed++
	}
	if shardReport != nil && shardReport.ListingHash == "" {
		shardReport = nil // the listing did not complete
	}
	rep.printSummary(out.textOut(f), sum, out, latency, shardReport, meas.measures())
	switch {
	case ctx.Err() != nil:
		return &ExitError{Code: ExitInterrupted}
	case err != nil:
		return badManifest(err)
	case sum.Failed > 0:
		return &ExitError{Code: ExitFailed, Err: fmt.Errorf("%d of %d objects failed", sum.Failed, sum.Failed+sum.Objects+sum.Skipped)}
	case rep.archived.Load() > 0:
		return &ExitError{Code: ExitFailed, Err: fmt.Errorf("%d objects are archived and were skipped: restore them first", rep.archived.Load())}
	}
	return nil
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
	return usageError(err)
}

// engineOptions turns validated settings into the engine's options.
func engineOptions(s config.Settings) transfer.Options {
	o := transfer.Options{
		Workers:     s.Workers,
		Threads:     s.Threads,
		MaxRequests: s.MaxConcurrentRequests,
		PartSize:    s.PartSize,
		Threshold:   s.MultipartThreshold,
		QueueSize:   s.MaxQueueSize,
	}
	if s.MaxBandwidth > 0 {
		o.Limiter = transfer.NewRateLimiter(s.MaxBandwidth)
	}
	return o
}

// isDirDest reports whether dest names a directory to put objects in.
func isDirDest(dest string) bool {
	if strings.HasSuffix(dest, "/") || strings.HasSuffix(dest, string(filepath.Separator)) {
		return true
	}
	st, err := os.Stat(dest)
	return err == nil && st.IsDir()
}

// checkWritable finds the nearest existing directory at or above dest
// and checks that a file can be created there, before any request.
func checkWritable(dest string) error {
	dir := filepath.Clean(dest)
	for {
		st, err := os.Stat(dir)
		if err == nil {
			if !st.IsDir() {
				if dir == filepath.Clean(dest) {
					dir = filepath.Dir(dir) // an existing file is replaced
					continue
				}
				return fmt.Errorf("destination %s: %s is not a directory", dest, dir)
			}
			break
		}
		if !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("destination %s: %w", dest, err)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	f, err := os.CreateTemp(dir, ".s3pd-probe-*")
	if err != nil {
		return fmt.Errorf("destination %s is not writable: %w", dest, errors.Unwrap(err))
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}
