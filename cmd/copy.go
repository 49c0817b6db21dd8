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

// NewCmdCopy builds `s3pd copy`.
func NewCmdCopy(f *Factory) *cobra.Command {
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
			return runCopy(c.Context(), f, c.Flags(), opts, args)
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
	f        *Factory
	opts     *copyOptions
	settings config.Settings
	explicit map[string]bool
	src, dst string
	shard    *shard.Spec  // --shard, nil without it
	scale    scaleRun     // who lists, when not the source (--manifest)
	failures atomic.Int64 // entries of the source that could not be read
	// listed holds every name SRC listed, for --delete (nil without it).
	listed *listedNames
}

func runCopy(ctx context.Context, f *Factory, fs *pflag.FlagSet, opts *copyOptions, args []string) error {
	dst := ""
	if len(args) == 2 {
		dst = args[1]
	}
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
	if err := opts.output.openRoute(f, dst == "-"); err != nil {
		return err
	}
	settings, origins, err := loadSettings(f, fs)
	if err != nil {
		return err
	}
	if err := f.startLogger(settings); err != nil {
		return err
	}
	spec, err := opts.scale.spec(f.Getenv)
	if err != nil {
		return err
	}
	r := &copyRun{f: f, opts: opts, settings: settings, explicit: origins.Explicit(), src: args[0], dst: dst, shard: spec}
	if opts.delete {
		r.listed = newListedNames()
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
			return r.getDelegate(ctx, fs, args)
		}
		return r.s3ToS3(ctx, threshold, crossStore)
	case srcS3:
		return r.getDelegate(ctx, fs, args)
	case dstS3:
		return r.localToS3(ctx)
	default:
		return r.localToLocal(ctx)
	}
}

func isS3(p string) bool { return strings.HasPrefix(p, "s3://") }

// getDelegate runs S3 to local (and --benchmark of an S3 source) as get.
func (r *copyRun) getDelegate(ctx context.Context, fs *pflag.FlagSet, args []string) error {
	g := &getOptions{benchmark: r.opts.benchmark, output: r.opts.output, rules: r.opts.rules, scale: r.opts.scale, req: r.opts.req}
	g.sink.Overwrite, g.sink.NoLock = r.opts.overwrite, r.opts.noLock
	return runGet(ctx, r.f, fs, g, args)
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
	err := runEngineObserved(ctx, r.f, lanes, sk, r.settings, r.opts.output, r.opts.rules.rules, false, nil, listing, sc)
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
	lanes := []transfer.Lane{{Name: "local", Source: src}}
	if r.opts.benchmark {
		return r.finish(ctx, lanes, sink.Discard{})
	}
	root := r.dst
	if src.Single() && !isDirDest(r.dst) {
		root = filepath.Dir(r.dst)
		src, err = r.localSource(filepath.Base(r.dst))
		if err != nil {
			return err
		}
		lanes[0].Source = src
	}
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
	return prune(r.f, ls, r.listed, r.opts.rules.rules, r.opts.output)
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
		return s3store.Prune(ctx, client, bucket, prefix, r.opts.req, func(name string) bool {
			return rules.Match(name) && !r.listed.has(name)
		}, r.opts.output.dryRun, report)
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
	if single && isDirDest(dst) {
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
	prefix := u.Key
	if src.Single() {
		if !u.Prefix {
			prefix = ""
			if src, err = r.localSource(u.Key); err != nil {
				return err
			}
		}
	} else if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
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
		NoSignRequest: s.NoSignRequest, Conns: s.MaxConcurrentRequests, TLS: r.f.TLS, OnRetry: r.f.logRetry}
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
	base := s3store.NewSource(srcClient, s3store.Target{Bucket: su.Bucket})
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
	prefix := du.Key
	single := false
	if r.opts.scale.manifest != "" {
		su.Key, su.Prefix = manifestPrefix(su.Key), true
		r.scale.readManifest(r.f, r.settings, r.opts.scale.manifest, su.Bucket, su.Key, base.With(target))
	}
	var prefetch *transfer.Prefetch
	if !su.Prefix {
		name := du.Key
		if du.Prefix {
			name = du.Key + su.Key[strings.LastIndex(su.Key, "/")+1:]
		}
		var obj transfer.Object
		if crossStore {
			var first *transfer.Body
			obj, first, err = base.With(target).Probe(ctx, su.Key, name, r.settings.PartSize)
			if err == nil {
				prefetch = transfer.NewPrefetch(obj.Key, first)
				defer prefetch.Close()
			}
		} else {
			obj, err = s3store.NewCopySource(base.With(target)).Probe(ctx, su.Key, name)
		}
		switch {
		case err == nil:
			single, target.Object = true, &obj
		case !errors.Is(err, transfer.ErrNotFound):
			return startError(ctx, err)
		}
		if single && r.shard != nil {
			return usageErrorf("--shard splits a prefix; %s is a single object", r.src)
		}
		if err := r.refuseSingleDelete(single); err != nil {
			return err
		}
		if single {
			prefix = ""
		} else {
			su.Key += "/"
		}
	}
	if !single {
		target.Prefix, target.FanOut = su.Key, cmp.Or(r.opts.scale.fanOut, defaultFanOut)
		if prefix != "" && !strings.HasSuffix(prefix, "/") {
			prefix += "/"
		}
	}
	src := base.With(target)
	var lane transfer.Source = src
	if !crossStore {
		lane = s3store.NewCopySource(src)
	}
	lanes := []transfer.Lane{{Name: "default", Source: lane}}
	if prefetch != nil {
		lanes = prefetch.Lanes(lanes)
	}
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
