package cmd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/s3pd/s3pd/pkg/config"
	"github.com/s3pd/s3pd/pkg/s3store"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// checkStdin checks the flags of `copy - s3://bucket/key`, an upload of
// standard input, and returns --expected-size.
func (opts *copyOptions) checkStdin() (int64, error) {
	if opts.src != "-" {
		if opts.expectedSize != "" {
			return 0, usageErrorf("--expected-size is the size of standard input: SRC -")
		}
		return 0, nil
	}
	u, err := s3store.ParseRawURL(opts.dst)
	switch {
	case !isS3(opts.dst):
		return 0, usageErrorf("SRC - uploads standard input: DEST is an s3://bucket/key URL, not %q", opts.dst)
	case err != nil:
		return 0, usageError(err)
	case u.Key == "" || strings.HasSuffix(u.Key, "/"):
		return 0, usageErrorf("SRC - uploads standard input to one object: DEST %s names no key", opts.dst)
	case opts.benchmark, opts.delete, opts.noClobber, len(opts.rules.rules) > 0, opts.scale.manifest != "", opts.scale.shard != "", opts.crossStore():
		return 0, usageErrorf("SRC - is one stream to one object: not with --benchmark, --delete, --no-clobber, --include, --exclude, --manifest, --shard or --source-*")
	}
	if opts.expectedSize == "" {
		return 0, nil
	}
	n, err := config.ParseSize(opts.expectedSize)
	if err != nil || n < 0 {
		return 0, usageErrorf("--expected-size %q: want a size (e.g. 200GiB)", opts.expectedSize)
	}
	return n, nil
}

// streamUpload runs `copy - s3://bucket/key`: standard input, of unknown
// size, into one object by a multipart upload whose parts are
// multipart_chunksize (larger when --expected-size says the stream would
// need over 10,000 of them), --threads of them in flight at most.
func streamUpload(ctx context.Context, f *runEnv, opts *copyOptions, settings config.Settings, expected int64) error {
	u, _ := s3store.ParseRawURL(opts.dst) // checked
	t, err := f.transport(ctx, settings)
	if err != nil {
		return err
	}
	client, err := s3store.NewClient(ctx, u.Bucket, clientOptions(f, settings, t))
	if err != nil {
		return startError(ctx, err)
	}
	up := opts.upload
	up.Req = opts.req
	sink := s3store.NewUploadSink(client, u.Bucket, up)
	partSize := s3store.StreamPartSize(settings.PartSize, expected)
	conc := cmp.Or(settings.Threads, config.BudgetThreads)
	out := f.output(opts.output)
	out.localTo = "stdin" // the parts' checksums were checked on arrival
	rep := newReporter(f.Factory, f.Logger, out, nil)
	rep.verb, rep.destination = "upload", sink.Destination
	rep.origin = func(transfer.Object) string { return "-" }
	f.logStart(settings, nil)
	res, err := sink.Stream(ctx, u.Key, f.IO.In, partSize, conc, rep.Bytes)
	rep.close()
	result := transfer.Result{Object: transfer.Object{Key: u.Key, Name: u.Key, Size: res.Bytes},
		Bytes: res.Bytes, Elapsed: res.Elapsed, Err: err}
	sum := transfer.Summary{Bytes: res.Bytes, Elapsed: res.Elapsed, Requests: res.Requests}
	switch {
	case err != nil:
		sum.Failed = 1
	case res.Verified:
		sum.Objects = 1
		result.Verification.Checksums = []string{strings.ToLower(up.ChecksumAlgorithm)}
	default:
		sum.Objects = 1
		result.Verification.Unverified = transfer.UnverifiedNoChecksum
	}
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		result.Err = context.Canceled
	}
	rep.ObjectDone(result)
	rep.printSummary(out.textOut(f.Factory), sum, out, false, nil, runMeasures{})
	switch {
	case ctx.Err() != nil:
		return &ExitError{Code: ExitInterrupted}
	case err != nil:
		return &ExitError{Code: ExitFailed, Err: fmt.Errorf("upload standard input: %w", err)}
	}
	return nil
}
