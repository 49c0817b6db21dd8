package cmd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/s3pd/s3pd/internal/job"
	"github.com/s3pd/s3pd/pkg/config"
	"github.com/s3pd/s3pd/pkg/httpstore"
	"github.com/s3pd/s3pd/pkg/local"
	"github.com/s3pd/s3pd/pkg/nics"
	"github.com/s3pd/s3pd/pkg/s3store"
	"github.com/s3pd/s3pd/pkg/store"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// copyOptions are copy's flags: get's (a copy from S3 to local runs as
// get, with these very options) and copy's own. The shared settings come
// from loadSettings. Its check and checkKeep are copy's: get's own run
// only on the route to local files.
type copyOptions struct {
	// getOptions hold the arguments (src, and dest "" with --benchmark),
	// the command's flags and get's flags.
	getOptions
	followSymlinks bool
	// noFollowSymlinks is the AWS CLI's --no-follow-symlinks.
	noFollowSymlinks bool
	upload           s3store.UploadOptions
	copyThreshold    string
	source           struct{ endpoint, region, profile string }
	// expectedSize is --expected-size, the size of a SRC - stream.
	expectedSize string
}

// NewCmdCopy builds `s3pd copy`. runF, when set, runs instead of runCopy
// with the parsed options (tests).
func NewCmdCopy(f *Factory, runF func(context.Context, *copyOptions) error) *cobra.Command {
	opts := &copyOptions{}
	c := &cobra.Command{
		Use:     "copy [flags] SRC DEST",
		Aliases: []string{"cp"},
		Short:   "Copy local to local, local to S3, S3 to S3 or S3 to local",
		Long: `Copy a file, a directory tree, an object or a prefix, in any direction,
through the same engine as get: many objects at once (--workers), large ones
in parallel parts (--threads, --partsize), each under a temporary name (or an
incomplete multipart upload) until it is whole.

SRC and DEST are local paths or s3:// URLs. The contents of a SRC directory
or prefix land under DEST (SRC/a lands at DEST/a). A single file or object
lands at DEST/<basename> when DEST is a directory or ends in /, else at DEST.

local to local: copy_file_range where the filesystems allow it, mode and
mtime kept, symbolic links followed as the AWS CLI does
(--no-follow-symlinks reports and skips them), files of the same size and
mtime skipped.
local to S3: PutObject below multipart_threshold, else a multipart upload
with a checksum on every part; objects of the same size and checksum are
skipped; a failed or interrupted upload is aborted.
S3 to S3 on one store: server-side CopyObject, or UploadPartCopy in parallel
above --copy-threshold. With --source-endpoint-url, --source-region or
--source-profile the bytes stream through this machine, never to disk.
S3 to local (and --benchmark of an S3 SRC): get itself, with every flag of
get; those only a download has (--version-id, --no-resume, --conflict-suffix,
--verify-existing, --report, --interval, --no-space-check) are refused on the
other routes.
Standard input to S3 (SRC -): one object, a multipart upload of unknown
size in parts of --partsize (--expected-size sizes them for a long stream),
--threads+1 parts in memory at most, aborted on an error or interrupt.`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) == 2 || opts.benchmark && len(args) == 1 {
				return nil
			}
			return usageErrorf("copy takes SRC and DEST (SRC alone with --benchmark), got %d argument(s)", len(args))
		},
		RunE: func(c *cobra.Command, args []string) error {
			opts.src, opts.dest, opts.flags = args[0], "", c.Flags()
			if len(args) == 2 {
				opts.dest = args[1]
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return runCopy(c.Context(), f, opts)
		},
	}
	fs := c.Flags()
	opts.registerFlags(fs)
	rewordForCopy(fs)
	fs.BoolVar(&opts.followSymlinks, "follow-symlinks", true, "copy what symbolic links point to (the AWS CLI's default)")
	fs.BoolVar(&opts.noFollowSymlinks, "no-follow-symlinks", false, "report and skip symbolic links instead of following them")
	registerUploadFlags(fs, &opts.upload)
	fs.StringVar(&opts.upload.SSE, "sse", "", "server-side encryption of uploaded and copied objects: AES256, aws:kms or aws:kms:dsse")
	fs.StringVar(&opts.upload.SSEKMSKeyID, "sse-kms-key-id", "", "KMS key for --sse aws:kms")
	fs.StringVar(&opts.upload.ChecksumAlgorithm, "checksum-algorithm", s3store.CRC64NVME, "checksum sent with every uploaded part: CRC64NVME or CRC32C")
	fs.StringVar(&opts.expectedSize, "expected-size", "", "SRC - (standard input): about how many bytes the stream holds, so that its parts are sized to stay within S3's 10,000 (as the AWS CLI's flag)")
	fs.StringVar(&opts.copyThreshold, "copy-threshold", "5GiB", "S3 to S3: objects from this size on are copied in parts with UploadPartCopy")
	fs.StringVar(&opts.source.endpoint, "source-endpoint-url", "", "S3 to S3: endpoint of SRC, when it differs from DEST's (the bytes then stream through)")
	fs.StringVar(&opts.source.region, "source-region", "", "S3 to S3: region of SRC (the bytes then stream through)")
	fs.StringVar(&opts.source.profile, "source-profile", "", "S3 to S3: AWS profile for SRC (the bytes then stream through)")
	return c
}

func runCopy(ctx context.Context, fac *Factory, opts *copyOptions) (err error) {
	threshold, err := opts.check()
	if err != nil {
		return err
	}
	expected, err := opts.checkStdin()
	if err != nil {
		return err
	}
	if opts.download() {
		// S3 to local is get: get's checks, settings, job and run, on
		// the options get's flags set.
		return runGet(ctx, fac, &opts.getOptions)
	}
	f, settings, origins, err := startRun(fac, opts.flags, &opts.output, opts.dest == "-")
	defer f.end(&err)
	if err != nil {
		return err
	}
	if opts.src == "-" {
		return streamUpload(ctx, f, opts, settings, expected)
	}
	t, err := opts.transport(ctx, f, settings)
	if err != nil {
		return err
	}
	var failures atomic.Int64 // entries of a local source that could not be read
	spec, err := opts.spec(ctx, f, settings, origins, threshold, t, &failures)
	if err != nil {
		return err
	}
	eopts, err := runOptions(settings, opts.output)
	if err != nil {
		return err
	}
	out := f.output(opts.output)
	out.localTo, out.dryVerb = localTo(opts.src, opts.dest), "copy"
	out.upload = isS3(opts.dest) && !opts.benchmark
	verb, origin := "upload", func(o transfer.Object) string { return o.Key }
	if u, err := s3store.ParseRawURL(spec.Source); err == nil {
		verb, origin = "copy", s3Origin(u.Bucket)
	} else if out.localTo == "local" {
		verb = "copy"
	}
	check := func() error {
		if failures.Load() > 0 {
			return &ExitError{Code: ExitFailed, Err: fmt.Errorf("%d of the entries of %s could not be read", failures.Load(), opts.src)}
		}
		return nil
	}
	return runJob(ctx, f, job.Spec{Copy: &spec, Engine: eopts, Bandwidth: settings.MaxBandwidth},
		jobRun{settings: settings, out: out, rules: opts.rules.rules, verb: verb, origin: origin, check: check, source: opts.src})
}

// localTo is where a copy from local files goes, "local" or "s3" ("":
// the source is S3).
func localTo(src, dst string) string {
	switch {
	case isS3(src):
		return ""
	case isS3(dst):
		return "s3"
	}
	return "local"
}

// spec is the copy the flags ask for, with the run's settings;
// failures counts the entries of a local source that cannot be read.
func (opts *copyOptions) spec(ctx context.Context, f *runEnv, settings config.Settings, origins *config.Origins, threshold int64, t *s3store.Transport, failures *atomic.Int64) (job.CopySpec, error) {
	shardSpec, err := opts.scale.spec(f.Getenv)
	if err != nil {
		return job.CopySpec{}, err
	}
	verify, err := opts.output.verifyMode()
	if err != nil {
		return job.CopySpec{}, err
	}
	spec := job.CopySpec{Src: opts.src, Dst: opts.dest, Benchmark: opts.benchmark,
		Read:     store.Options{Verify: verify != transfer.VerifyOff, StallTimeout: opts.output.stall, OnRetry: f.logListRetry},
		PartSize: settings.PartSize, Threshold: settings.MultipartThreshold, CopyThreshold: threshold,
		PartSizeSet: origins.Explicit()["multipart_chunksize"],
		FanOut:      cmp.Or(opts.scale.fanOut, defaultFanOut), Delete: opts.delete,
		Scale: opts.scale.scaleSpec(f, settings, t, shardSpec, opts.rules.rules)}
	if isS3(opts.src) {
		u, err := opts.rules.parseSource(opts.src)
		if err != nil {
			return spec, usageError(err)
		}
		spec.Source = s3Location(u)
	}
	up := opts.upload
	up.Overwrite, up.Req, up.SizeOnly = opts.sink.Overwrite, opts.req, opts.sink.SizeOnly
	up.JournalDir, up.Report = uploadJournalDir(f.Getenv), uploadReport(f)
	dest := clientOptions(f, settings, t)
	so := storeOptions{
		s3:     s3store.OpenerOptions{Client: dest, Req: opts.req},
		s3Dest: s3store.DestOptions{Client: dest, Upload: up},
		local:  local.SourceOptions{FollowSymlinks: opts.followSymlinks, Report: func(p string, err error) { reportUnread(f, failures, p, err) }},
		localDest: local.Options{Overwrite: opts.sink.Overwrite, NoClobber: opts.sink.NoClobber, NoLock: opts.sink.NoLock, SizeOnly: opts.sink.SizeOnly,
			DryRun: opts.output.dryRun, Warn: sinkWarn(f)},
	}
	spec.Stores, spec.CrossStore, err = sourceStores(ctx, f, opts, settings, so)
	return spec, err
}

// transport is the run's transport when SRC or DEST is in S3 (nil for
// local to local, which checks only that the cards of --nics exist).
func (opts *copyOptions) transport(ctx context.Context, f *runEnv, s config.Settings) (*s3store.Transport, error) {
	if isS3(opts.src) || isS3(opts.dest) {
		return f.transport(ctx, s)
	}
	if len(s.NICs) > 0 {
		if _, err := nics.Resolve(strings.Join(s.NICs, ",")); err != nil {
			return nil, usageError(err)
		}
	}
	return nil, nil
}

// check checks copy's flags against each other (they do not depend on
// the settings) and returns --copy-threshold. From S3 to local it checks
// only copy's own flags: get's are get's to check (runGet).
func (opts *copyOptions) check() (int64, error) {
	if err := opts.checkUpload(); err != nil {
		return 0, err
	}
	if opts.crossStore() && !(isS3(opts.src) && isS3(opts.dest)) {
		return 0, usageErrorf("--source-endpoint-url, --source-region and --source-profile apply to S3 to S3 copies")
	}
	threshold, err := config.ParseSize(opts.copyThreshold)
	if err != nil || threshold < 1 || threshold > s3store.DefaultCopyThreshold {
		return 0, usageErrorf("--copy-threshold %q: want a size from 1 byte to 5GiB", opts.copyThreshold)
	}
	if opts.download() {
		return threshold, nil
	}
	if err := opts.refuseDownloadFlags(); err != nil {
		return 0, err
	}
	if err := checkModes(opts.output, opts.benchmark, opts.dest); err != nil {
		return 0, err
	}
	if opts.req.RequestPayer != "" && opts.req.RequestPayer != "requester" {
		return 0, usageErrorf("--request-payer %q: the only value is requester", opts.req.RequestPayer)
	}
	for _, check := range []func() error{opts.checkKeep, opts.checkStores, func() error { return opts.rules.refuseIncludeAlone(opts.src) }} {
		if err := check(); err != nil {
			return 0, err
		}
	}
	opts.followSymlinks = opts.followSymlinks && !opts.noFollowSymlinks
	opts.upload.NoClobber = opts.sink.NoClobber
	return threshold, nil
}

// download says the copy is from a store (S3, or an http(s) URL) to
// local files or stdout (or a --benchmark of one): get's route.
func (opts *copyOptions) download() bool {
	remote := isS3(opts.src) || httpstore.IsURL(opts.src)
	return remote && (opts.benchmark || !isS3(opts.dest))
}

// checkUpload refuses what S3 would refuse of the objects a copy writes
// (the flags get has not: every route checks them).
func (opts *copyOptions) checkUpload() error {
	switch opts.upload.ChecksumAlgorithm {
	case s3store.CRC64NVME, s3store.CRC32C:
	default:
		return usageErrorf("--checksum-algorithm %q: want CRC64NVME or CRC32C", opts.upload.ChecksumAlgorithm)
	}
	switch opts.upload.SSE {
	case "", "AES256", "aws:kms", "aws:kms:dsse":
	default:
		return usageErrorf("--sse %q: want AES256, aws:kms or aws:kms:dsse", opts.upload.SSE)
	}
	if opts.upload.SSEKMSKeyID != "" && !strings.HasPrefix(opts.upload.SSE, "aws:kms") {
		return usageErrorf("--sse-kms-key-id needs --sse aws:kms or aws:kms:dsse")
	}
	return checkStorageClass(opts.upload.StorageClass)
}

// checkKeep refuses rules for what is already at DEST that contradict
// each other.
func (opts *copyOptions) checkKeep() error {
	if opts.sink.Overwrite && opts.sink.NoClobber {
		return usageErrorf("--overwrite and --no-clobber contradict each other")
	}
	if opts.sink.SizeOnly && (opts.sink.Overwrite || opts.output.exactTimestamps) {
		return usageErrorf("--size-only keeps files and objects by their size alone: not with --overwrite or --exact-timestamps")
	}
	if opts.sink.SizeOnly && isS3(opts.src) && isS3(opts.dest) && !opts.crossStore() {
		return usageErrorf("--size-only: a server-side copy skips objects by size and ETag, which it always compares")
	}
	if opts.delete && (opts.benchmark || opts.dest == "-") {
		return usageErrorf("--delete needs a directory or a prefix as DEST")
	}
	return nil
}

// checkStores refuses flags that do not apply to the stores SRC and DEST
// are on, and directory buckets' refusals.
func (opts *copyOptions) checkStores() error {
	src, dst := opts.src, opts.dest
	if opts.ssec.given() {
		return usageErrorf("--sse-c and its key apply to downloads (S3 to local); SSE-C uploads and copies are not supported")
	}
	if opts.scale.manifest != "" && !isS3(src) {
		return usageErrorf("--manifest names S3 objects; SRC %s is local", src)
	}
	for i, p := range []string{src, dst} {
		if u, err := s3store.ParseRawURL(p); isS3(p) && err == nil {
			df := directoryFlags{requestPayer: opts.req.RequestPayer}
			if i == 1 {
				df.storageClass, df.sse = opts.upload.StorageClass, opts.upload.SSE // of what is written
			}
			if err := refuseDirectory(u.Bucket, df); err != nil {
				return err
			}
		}
	}
	return nil
}

// crossStore says SRC is on another store than DEST (or read with other
// credentials): the bytes stream through.
func (opts *copyOptions) crossStore() bool {
	return opts.source.endpoint != "" || opts.source.region != "" || opts.source.profile != ""
}

func isS3(p string) bool { return strings.HasPrefix(p, "s3://") }

// reportUnread logs an entry of a local source that is not copied.
// Links and special files are skipped by design; anything unreadable
// fails the run (failures counts them).
func reportUnread(f *runEnv, failures *atomic.Int64, p string, err error) {
	if errors.Is(err, local.ErrSymlink) || errors.Is(err, local.ErrSpecial) {
		f.Logger.Warn("not copied", zap.String("path", p), zap.String("reason", err.Error()))
		return
	}
	failures.Add(1)
	f.Logger.Error("cannot read", zap.String("path", p), zap.String("reason", err.Error()))
}
