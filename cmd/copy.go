package cmd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"github.com/s3pd/s3pd/internal/job"
	"github.com/s3pd/s3pd/pkg/config"
	"github.com/s3pd/s3pd/pkg/local"
	"github.com/s3pd/s3pd/pkg/s3store"
	"github.com/s3pd/s3pd/pkg/shard"
	"github.com/s3pd/s3pd/pkg/sink"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// copyOptions are copy's own flags; the shared settings come from
// loadSettings.
type copyOptions struct {
	// src and dst are the arguments (dst "" with --benchmark).
	src, dst string
	// flags are the command's flags, for the settings they set.
	flags          *pflag.FlagSet
	output         outputFlags
	rules          ruleFlags
	scale          scaleFlags
	benchmark      bool
	overwrite      bool
	noLock         bool
	followSymlinks bool
	// noFollowSymlinks is the AWS CLI's --no-follow-symlinks.
	noFollowSymlinks bool
	noClobber        bool
	delete           bool
	req              s3store.Request
	upload           s3store.UploadOptions
	copyThreshold    string
	source           struct{ endpoint, region, profile string }
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
S3 to local: as get.`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) == 2 || opts.benchmark && len(args) == 1 {
				return nil
			}
			return usageErrorf("copy takes SRC and DEST (SRC alone with --benchmark), got %d argument(s)", len(args))
		},
		RunE: func(c *cobra.Command, args []string) error {
			opts.src, opts.dst, opts.flags = args[0], "", c.Flags()
			if len(args) == 2 {
				opts.dst = args[1]
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return runCopy(c.Context(), f, opts)
		},
	}
	fs := c.Flags()
	addSettingsFlags(fs)
	opts.output.register(fs)
	opts.rules.register(fs)
	opts.scale.register(fs)
	fs.BoolVar(&opts.benchmark, "benchmark", false, "keep nothing: read SRC, count and drop the bytes (no DEST needed)")
	fs.BoolVar(&opts.overwrite, "overwrite", false, "copy even files and objects identical at DEST")
	fs.BoolVar(&opts.noLock, "no-lock", false, "local DEST: do not lock it (for file systems that refuse locks): you promise no other run writes there")
	fs.BoolVar(&opts.followSymlinks, "follow-symlinks", true, "copy what symbolic links point to (the AWS CLI's default)")
	fs.BoolVar(&opts.noFollowSymlinks, "no-follow-symlinks", false, "report and skip symbolic links instead of following them")
	fs.BoolVar(&opts.noClobber, "no-clobber", false, "never replace an existing file or object (skipped as \"exists\")")
	fs.BoolVar(&opts.delete, "delete", false, "remove files or objects under DEST that SRC does not have (after a run without failures)")
	registerUploadFlags(fs, &opts.upload)
	fs.StringVar(&opts.upload.SSE, "sse", "", "server-side encryption of uploaded and copied objects: AES256, aws:kms or aws:kms:dsse")
	fs.StringVar(&opts.upload.SSEKMSKeyID, "sse-kms-key-id", "", "KMS key for --sse aws:kms")
	fs.StringVar(&opts.upload.ChecksumAlgorithm, "checksum-algorithm", s3store.CRC64NVME, "checksum sent with every uploaded part: CRC64NVME or CRC32C")
	fs.StringVar(&opts.copyThreshold, "copy-threshold", "5GiB", "S3 to S3: objects from this size on are copied in parts with UploadPartCopy")
	fs.StringVar(&opts.source.endpoint, "source-endpoint-url", "", "S3 to S3: endpoint of SRC, when it differs from DEST's (the bytes then stream through)")
	fs.StringVar(&opts.source.region, "source-region", "", "S3 to S3: region of SRC (the bytes then stream through)")
	fs.StringVar(&opts.source.profile, "source-profile", "", "S3 to S3: AWS profile for SRC (the bytes then stream through)")
	fs.StringVar(&opts.req.RequestPayer, "request-payer", "", `confirm that the requester pays ("requester")`)
	fs.StringVar(&opts.req.ExpectedBucketOwner, "expected-bucket-owner", "", "account ID the bucket must belong to")
	return c
}

// copyRun is one resolved copy: its settings, and what runEngine needs.
type copyRun struct {
	f        *runEnv
	opts     *copyOptions
	settings config.Settings
	origins  *config.Origins
	explicit map[string]bool
	src, dst string
	shard    *shard.Spec  // --shard, nil without it
	scale    scaleRun     // who lists, when not the source (--manifest)
	failures atomic.Int64 // entries of the source that could not be read
	// listed holds every name SRC listed, for --delete (nil without it).
	listed *job.Listed
}

func runCopy(ctx context.Context, fac *Factory, opts *copyOptions) (err error) {
	dst := opts.dst
	if opts.benchmark && dst != "" {
		return usageErrorf("--benchmark keeps nothing: drop DEST %q", dst)
	}
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
	if opts.req.RequestPayer != "" && opts.req.RequestPayer != "requester" {
		return usageErrorf("--request-payer %q: the only value is requester", opts.req.RequestPayer)
	}
	if err := checkStorageClass(opts.upload.StorageClass); err != nil {
		return err
	}
	if opts.overwrite && opts.noClobber {
		return usageErrorf("--overwrite and --no-clobber contradict each other")
	}
	if opts.delete && (opts.benchmark || dst == "-") {
		return usageErrorf("--delete needs a directory or a prefix as DEST")
	}
	opts.followSymlinks = opts.followSymlinks && !opts.noFollowSymlinks
	opts.upload.NoClobber = opts.noClobber
	threshold, err := config.ParseSize(opts.copyThreshold)
	if err != nil || threshold < 1 || threshold > s3store.DefaultCopyThreshold {
		return usageErrorf("--copy-threshold %q: want a size from 1 byte to 5GiB", opts.copyThreshold)
	}
	f, settings, origins, err := startRun(fac, opts.flags, &opts.output, dst == "-")
	defer f.end(&err)
	if err != nil {
		return err
	}
	spec, err := opts.scale.spec(f.Getenv)
	if err != nil {
		return err
	}
	r := &copyRun{f: f, opts: opts, settings: settings, origins: origins, explicit: origins.Explicit(), src: opts.src, dst: dst, shard: spec}
	if opts.delete {
		r.listed = job.NewListed()
	}
	srcS3, dstS3 := isS3(r.src), isS3(dst)
	if opts.scale.manifest != "" && !srcS3 {
		return usageErrorf("--manifest names S3 objects; SRC %s is local", r.src)
	}
	crossStore := opts.source.endpoint != "" || opts.source.region != "" || opts.source.profile != ""
	if crossStore && !(srcS3 && dstS3) {
		return usageErrorf("--source-endpoint-url, --source-region and --source-profile apply to S3 to S3 copies")
	}
	switch {
	case srcS3 && (dstS3 || opts.benchmark):
		if opts.benchmark {
			return r.download(ctx)
		}
		return r.s3ToS3(ctx, threshold, crossStore)
	case srcS3:
		return r.download(ctx)
	case dstS3:
		return r.localToS3(ctx)
	default:
		return r.localToLocal(ctx)
	}
}

func isS3(p string) bool { return strings.HasPrefix(p, "s3://") }

// download runs S3 to local (and --benchmark of an S3 source) as get
// does, with the settings and logger this run has already.
func (r *copyRun) download(ctx context.Context) error {
	g := &getOptions{src: r.src, dest: r.dst, flags: r.opts.flags, benchmark: r.opts.benchmark,
		output: r.opts.output, rules: r.opts.rules, scale: r.opts.scale, req: r.opts.req, delete: r.opts.delete}
	g.sink.Overwrite, g.sink.NoLock, g.sink.NoClobber = r.opts.overwrite, r.opts.noLock, r.opts.noClobber
	u, spec, err := g.check(r.f.Factory)
	if err != nil {
		return err
	}
	return download(ctx, r.f, g, u, spec, r.settings, r.origins)
}

// report logs an entry of a local source that is not copied. Links and
// special files are skipped by design; anything unreadable fails the run.
func (r *copyRun) report(p string, err error) {
	if errors.Is(err, local.ErrSymlink) || errors.Is(err, local.ErrSpecial) {
		r.f.Logger.Warn("not copied", zap.String("path", p), zap.String("reason", err.Error()))
		return
	}
	r.failures.Add(1)
	r.f.Logger.Error("cannot read", zap.String("path", p), zap.String("reason", err.Error()))
}

// localSource opens SRC, naming a single file name.
func (r *copyRun) localSource(name string) (*local.Source, error) {
	s, err := local.NewSource(r.src, local.SourceOptions{FollowSymlinks: r.opts.followSymlinks, Name: name, Report: r.report})
	if err != nil {
		return nil, usageError(err)
	}
	return s, nil
}

// finish runs the engine and fails the run if parts of the source could
// not be read.
func (r *copyRun) finish(ctx context.Context, lanes []transfer.Lane, sk transfer.Sink) error {
	sc := &r.scale
	sc.split(lanes[0].Source, r.shard, r.opts.rules.rules)
	var listing transfer.ListObserver
	if r.listed != nil {
		listing = r.listed
	}
	err := runEngine(ctx, r.f, engineRun{lanes: lanes, sink: sk, settings: r.settings, out: r.opts.output, rules: r.opts.rules.rules, listing: listing, scale: sc})
	if err == nil && r.failures.Load() > 0 {
		return &ExitError{Code: ExitFailed, Err: fmt.Errorf("%d entries of %s could not be read", r.failures.Load(), r.src)}
	}
	return err
}

func (r *copyRun) localToLocal(ctx context.Context) error {
	src, err := r.localSource("")
	if err != nil {
		return err
	}
	if err := r.refuseSingleDelete(src.Single()); err != nil {
		return err
	}
	r.opts.output.localTo = "local"
	if r.opts.benchmark {
		return r.finish(ctx, []transfer.Lane{{Name: "local", Source: src}}, sink.Discard{})
	}
	root, name := job.Land(src.Single(), r.src, r.dst, job.IsDir(r.dst))
	if src.Single() {
		if src, err = r.localSource(name); err != nil {
			return err
		}
	}
	lanes := []transfer.Lane{{Name: "local", Source: src}}
	if err := checkOverlap(src.Root(), r.dst, src.Single()); err != nil {
		return usageError(err)
	}
	if err := checkWritable(r.dst); err != nil {
		return usageError(err)
	}
	ls, err := local.NewSink(root, local.Options{Overwrite: r.opts.overwrite, NoClobber: r.opts.noClobber, NoLock: r.opts.noLock, LockID: shardLockID(r.shard), DryRun: r.opts.output.dryRun, Warn: sinkWarn(r.f)})
	if err != nil {
		return usageError(err)
	}
	defer ls.Close()
	if err := r.finish(ctx, lanes, local.NewCopySink(ls)); err != nil || r.listed == nil {
		return err
	}
	if !r.listed.Complete() {
		return &ExitError{Code: ExitFailed, Err: job.ErrIncompleteListing}
	}
	rules := r.opts.rules.rules
	return reportDeletes(r.f, r.opts.output, "files", func(report func(string, int64)) error {
		return r.listed.PruneLocal(ls, rules.Match, r.opts.output.dryRun, report)
	})
}

// refuseSingleDelete refuses --delete when SRC is one file or object.
func (r *copyRun) refuseSingleDelete(single bool) error {
	if r.listed != nil && single {
		return usageErrorf("--delete needs a directory or a prefix as SRC; %s is a single file or object", r.src)
	}
	return nil
}

// pruneS3 removes the objects under prefix that SRC did not list
// (--delete), after a run without failures.
func (r *copyRun) pruneS3(ctx context.Context, client *s3.Client, bucket, prefix string) error {
	rules := r.opts.rules.rules
	return reportDeletes(r.f, r.opts.output, "objects", func(report func(string, int64)) error {
		return r.listed.PruneS3(ctx, client, bucket, prefix, r.opts.req, rules.Match, r.opts.output.dryRun, report)
	})
}

// checkOverlap refuses a copy onto itself or into its own tree.
func checkOverlap(src, dst string, single bool) error {
	s, err := realPath(src)
	if err != nil {
		return err
	}
	d, err := realPath(dst)
	if err != nil {
		return err
	}
	if single && job.IsDir(dst) {
		d = filepath.Join(d, filepath.Base(s))
	}
	switch {
	case s == d:
		return fmt.Errorf("source and destination are the same: %s", src)
	case !single && strings.HasPrefix(d, s+string(filepath.Separator)):
		return fmt.Errorf("destination %s is inside source %s", dst, src)
	}
	return nil
}

// realPath resolves p's symbolic links as far as p exists, and keeps the
// rest as written, so paths that do not exist yet compare too.
func realPath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	rest := ""
	for dir := abs; ; dir = filepath.Dir(dir) {
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(real, rest), nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
		if filepath.Dir(dir) == dir {
			return abs, nil
		}
		rest = filepath.Join(filepath.Base(dir), rest)
	}
}

func (r *copyRun) localToS3(ctx context.Context) error {
	u, err := s3store.ParseRawURL(r.dst)
	if err != nil {
		return usageError(err)
	}
	src, err := r.localSource("")
	if err != nil {
		return err
	}
	if err := r.refuseSingleDelete(src.Single()); err != nil {
		return err
	}
	root, name := job.Land(src.Single(), r.src, u.Key, u.Prefix)
	prefix := job.KeyPrefix(root)
	if src.Single() {
		if src, err = r.localSource(name); err != nil {
			return err
		}
	}
	client, err := s3store.NewClient(ctx, u.Bucket, r.clientOptions())
	if err != nil {
		return startError(ctx, err)
	}
	opts := r.uploadOptions(prefix)
	r.opts.output.localTo = "s3"
	opts.SourceChecksum = func(ctx context.Context, o transfer.Object, alg string) (string, error) {
		return s3store.ChecksumOf(ctx, src, o, alg)
	}
	if err := r.finish(ctx, []transfer.Lane{{Name: "local", Source: src}}, s3store.NewUploadSink(client, u.Bucket, opts)); err != nil || r.listed == nil {
		return err
	}
	return r.pruneS3(ctx, client, u.Bucket, prefix)
}

func (r *copyRun) clientOptions() s3store.ClientOptions {
	s := r.settings
	return s3store.ClientOptions{Region: s.Region, EndpointURL: s.EndpointURL, AddressingStyle: s.AddressingStyle, Profile: s.Profile,
		NoSignRequest: s.NoSignRequest, Conns: s.MaxConcurrentRequests, OnRetry: r.f.logRetry}
}

func (r *copyRun) uploadOptions(prefix string) s3store.UploadOptions {
	o := r.opts.upload
	o.Prefix, o.PartSize, o.Threshold = prefix, r.settings.PartSize, r.settings.MultipartThreshold
	o.Overwrite, o.Req = r.opts.overwrite, r.opts.req
	// The SDK sends a trailing checksum over HTTPS only.
	o.Trailer = r.settings.EndpointURL == "" || strings.HasPrefix(r.settings.EndpointURL, "https://")
	return o
}

// copyPartSize is the part of a server-side copy when --partsize is not
// given: 1 GiB parts copy S3's largest object (5 TiB) in 5,120 parts.
const copyPartSize = 1 << 30

// streamBuffer bounds the memory of parts held in buffers when a stream
// between stores cannot send its checksum as a trailer (plain HTTP).
const streamBuffer = 1 << 30

func (r *copyRun) s3ToS3(ctx context.Context, threshold int64, crossStore bool) error {
	su, err := r.opts.rules.parseSource(r.src)
	if err != nil {
		return usageError(err)
	}
	du, err := s3store.ParseRawURL(r.dst)
	if err != nil {
		return usageError(err)
	}
	if !crossStore && su.Bucket == du.Bucket {
		switch {
		case strings.TrimSuffix(su.Key, "/") == strings.TrimSuffix(du.Key, "/"):
			return usageErrorf("source and destination are the same: %s", r.src)
		case su.Prefix && strings.HasPrefix(du.Key, su.Key):
			return usageErrorf("destination %s is inside source %s", r.dst, r.src)
		}
	}
	dstClient, err := s3store.NewClient(ctx, du.Bucket, r.clientOptions())
	if err != nil {
		return startError(ctx, err)
	}
	sopts := r.clientOptions()
	if crossStore {
		sopts.EndpointURL = cmp.Or(r.opts.source.endpoint, sopts.EndpointURL)
		sopts.Region = cmp.Or(r.opts.source.region, sopts.Region)
		sopts.Profile = cmp.Or(r.opts.source.profile, sopts.Profile)
	}
	srcClient, err := s3store.NewClient(ctx, su.Bucket, sopts)
	if err != nil {
		return startError(ctx, err)
	}
	verify, err := r.opts.output.verifyMode()
	if err != nil {
		return err
	}
	target := s3store.Target{Bucket: su.Bucket, Req: r.opts.req, StallTimeout: r.opts.output.stall, OnRetry: r.f.logListRetry}
	if crossStore {
		// The bytes stream through: verified as get verifies them. A
		// server-side copy moves none, so there is nothing to verify.
		target.Verify = verify != transfer.VerifyOff
	} else {
		if r.settings.MaxBandwidth > 0 {
			r.f.Logger.Warn("--max-bandwidth does not apply to a server-side copy: the bytes move inside S3, not through s3pd")
		}
		r.settings.MultipartThreshold = threshold
		if !r.explicit["multipart_chunksize"] {
			r.settings.PartSize = copyPartSize
		}
	}
	base := s3store.NewSource(srcClient, s3store.Target{Bucket: su.Bucket})
	if r.opts.scale.manifest != "" {
		su.Key, su.Prefix = manifestPrefix(su.Key), true
		r.scale.readManifest(r.f.Factory, r.settings, r.opts.scale.manifest, su.Bucket, su.Key, base.With(target))
	}
	spec := job.S3Spec{Lanes: []job.S3Lane{{Name: "default", Base: base}}, Target: target, Key: su.Key, Prefix: su.Prefix,
		FirstRange: r.settings.PartSize, FanOut: cmp.Or(r.opts.scale.fanOut, defaultFanOut), ServerSide: !crossStore}
	if !su.Prefix {
		_, spec.Name = job.Land(true, su.Key, du.Key, du.Prefix)
	}
	res, err := job.ResolveS3(ctx, spec)
	if err != nil {
		return startError(ctx, err)
	}
	defer res.Close()
	if res.Single && r.shard != nil {
		return usageErrorf("--shard splits a prefix; %s is a single object", r.src)
	}
	if err := r.refuseSingleDelete(res.Single); err != nil {
		return err
	}
	root, _ := job.Land(res.Single, su.Key, du.Key, du.Prefix)
	prefix := job.KeyPrefix(root)
	lanes, src := res.Lanes, res.Source
	opts := r.uploadOptions(prefix)
	if !crossStore {
		if err := r.finish(ctx, lanes, s3store.NewCopySink(dstClient, su.Bucket, du.Bucket, opts)); err != nil || r.listed == nil {
			return err
		}
		return r.pruneS3(ctx, dstClient, du.Bucket, prefix)
	}
	if !opts.Trailer {
		r.settings.MaxConcurrentRequests = min(r.settings.MaxConcurrentRequests, max(1, int(streamBuffer/r.settings.PartSize)))
	}
	opts.SourceChecksum = src.Checksum
	if err := r.finish(ctx, lanes, s3store.NewUploadSink(dstClient, du.Bucket, opts)); err != nil || r.listed == nil {
		return err
	}
	return r.pruneS3(ctx, dstClient, du.Bucket, prefix)
}
