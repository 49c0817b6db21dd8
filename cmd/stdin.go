package cmd

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/s3pd/s3pd/internal/job"
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
	u, err := s3store.ParseRawURL(opts.dest)
	switch {
	case !isS3(opts.dest):
		return 0, usageErrorf("SRC - uploads standard input: DEST is an s3://bucket/key URL, not %q", opts.dest)
	case err != nil:
		return 0, usageError(err)
	case u.Key == "" || strings.HasSuffix(u.Key, "/"):
		return 0, usageErrorf("SRC - uploads standard input to one object: DEST %s names no key", opts.dest)
	case opts.benchmark, opts.delete, opts.sink.NoClobber, len(opts.rules.rules) > 0, opts.scale.manifest != "", opts.scale.shard != "", opts.crossStore():
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
	if err := refuseClosedStdin(f.IO.In, opts.dest); err != nil {
		return err
	}
	t, err := f.transport(ctx, settings)
	if err != nil {
		return err
	}
	eopts, err := runOptions(settings, opts.output)
	if err != nil {
		return err
	}
	up := opts.upload
	up.Req = opts.req
	up.JournalDir, up.Report = uploadJournalDir(f.Getenv), uploadReport(f)
	reg := stores(storeOptions{s3Dest: s3store.DestOptions{Client: clientOptions(f, settings, t), Upload: up}})
	spec := job.CopySpec{Src: opts.src, Dst: opts.dest, Stores: reg, PartSize: settings.PartSize,
		Stdin: &job.StdinSpec{In: f.IO.In, ExpectedSize: expected, Parts: cmp.Or(settings.Threads, config.BudgetThreads)}}
	out := f.output(opts.output)
	out.localTo, out.upload = "stdin", true
	return runJob(ctx, f, job.Spec{Copy: &spec, Engine: eopts},
		jobRun{settings: settings, out: out, verb: "upload", origin: func(transfer.Object) string { return "-" }})
}

// streamJob runs a stream's job and renders it: its one object, a
// summary without the engine's measures, and the exit code.
func streamJob(ctx context.Context, f *runEnv, run *job.Run, how jobRun) error {
	out := how.out
	rep := newReporter(f.Factory, f.Logger, out, nil)
	rep.verb, rep.destination, rep.origin = how.verb, run.Destination, how.origin
	sum, err := run.Transfer(ctx, job.Hooks{Observer: rep, Start: func() { f.logStart(how.settings, run.Lanes) }})
	rep.close()
	rep.printSummary(out.textOut(f.Factory), sum, out, false, nil, nil)
	switch {
	case ctx.Err() != nil:
		return &ExitError{Code: ExitInterrupted}
	case err != nil:
		return &ExitError{Code: ExitFailed, Err: fmt.Errorf("upload standard input: %w", err)}
	}
	return nil
}

// uploadJournalDir is where upload journals live: s3pd/uploads in the
// user's cache directory ($XDG_CACHE_HOME, else ~/.cache); "" when there
// is none, and an upload then resumes by its parts' listed checksums
// alone.
func uploadJournalDir(getenv func(string) string) string {
	if d := getenv("XDG_CACHE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "s3pd", "uploads")
	}
	if h := getenv("HOME"); filepath.IsAbs(h) {
		return filepath.Join(h, ".cache", "s3pd", "uploads")
	}
	return ""
}

// uploadReport prints, one line each (its keys escaped, printableText),
// the incomplete uploads a run aborts.
func uploadReport(f *runEnv) func(string) {
	return func(msg string) { f.Logger.Warn(printableText(msg)) }
}

// refuseClosedStdin refuses a standard input that is closed (the Go
// runtime opens /dev/null in its place) or /dev/null itself: almost
// always a script's mistake, which would otherwise put an empty object
// at the key. An empty object comes from an empty pipe.
func refuseClosedStdin(in io.Reader, dst string) error {
	file, ok := in.(*os.File)
	if !ok {
		return nil
	}
	st, err := file.Stat()
	if err != nil {
		return nil // the read says what is wrong
	}
	null, err := os.Stat(os.DevNull)
	if err == nil && os.SameFile(st, null) {
		return usageErrorf("SRC -: standard input is closed or %s, so there is nothing to upload to %s; for an empty object, pipe nothing into it (: | s3pd copy - %s)", os.DevNull, dst, dst)
	}
	return nil
}
