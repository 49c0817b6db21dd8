package cmd

import (
	"context"
	"errors"
	"fmt"

	"github.com/s3pd/s3pd/internal/job"
	"github.com/s3pd/s3pd/pkg/config"
	"github.com/s3pd/s3pd/pkg/local"
	"github.com/s3pd/s3pd/pkg/s3store"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// jobRun is how a command renders one run of a job.
type jobRun struct {
	settings config.Settings
	out      runOutput
	rules    transfer.Rules
	// latency adds bench's latency lines to the summary.
	latency bool
	// verb and origin name the direction and an object's source in the
	// per-object lines (reporter.line).
	verb   string
	origin func(transfer.Object) string
	// check, when set, runs after a transfer without error, before
	// --delete: what the run found wrong besides its objects.
	check func() error
	// clock, when set, ends the transfer at its time (bench --duration),
	// reading the listing again until then; classes, when set, counts
	// the objects by class (bench).
	clock   *benchClock
	classes *job.Classes
	// source is SRC as given, which a run that selects nothing names.
	source string
	// directory is the source's bucket when it is a directory bucket.
	directory string
	// summary, when set, receives the transfer's summary (a sweep's
	// cell is measured by it).
	summary *transfer.Summary
}

// s3Origin names an object of bucket by its URL.
func s3Origin(bucket string) func(transfer.Object) string {
	return func(o transfer.Object) string { return "s3://" + bucket + "/" + o.Key }
}

// runJob is every transferring command's run (get, cat, copy, bench):
// it opens spec's job, transfers it, renders its outcome (the progress
// bar, the lines of each object, the summary, the report, the exit
// code) and, with --delete, deletes after it.
func runJob(ctx context.Context, f *runEnv, spec job.Spec, how jobRun) error {
	run, err := job.Open(ctx, spec)
	if err != nil {
		return jobError(ctx, err)
	}
	how.directory = directorySource(spec)
	defer run.Close()
	if run.ServerSide && how.settings.MaxBandwidth > 0 {
		f.Logger.Warn("--max-bandwidth does not apply to a server-side copy: the bytes move inside S3, not through s3pd")
	}
	if run.Streams {
		err = streamJob(ctx, f, run, how)
	} else {
		err = transferJob(ctx, f, run, how)
	}
	if err == nil && how.check != nil {
		err = how.check()
	}
	if err != nil || run.Deletes == "" {
		return err
	}
	if !run.ListingComplete() {
		return &ExitError{Code: ExitFailed, Err: job.ErrIncompleteListing}
	}
	return reportDeletes(f, how.out, run.Deletes, func(report func(string, int64)) error {
		return run.Delete(ctx, how.rules.Match, how.out.dryRun, report)
	})
}

// transferJob runs the engine over run and renders its outcome.
func transferJob(ctx context.Context, f *runEnv, run *job.Run, how jobRun) (runErr error) {
	out, settings := how.out, how.settings
	// What the job made of the budget (a server-side copy's parts, a
	// stream's cap on requests) is what the run logs and reports.
	settings.PartSize, settings.MultipartThreshold, settings.MaxConcurrentRequests = run.Options.PartSize, run.Options.Threshold, run.Options.MaxRequests
	total := &listedBytes{}
	rep := newReporter(f.Factory, f.Logger, out, total)
	rep.destination, rep.verb, rep.origin, rep.direct, rep.directory = run.Destination, how.verb, how.origin, directIO(run.Dest), how.directory
	if run.Fleet() != nil {
		rep.fleet = run.Fleet
	}
	h := job.Hooks{Observer: rep, Listing: total}
	if match := how.rules.Filter(); match != nil {
		rep.selection = &selection{}
		h.Filter = rep.selection.filter(match)
	}
	meas := newMeasurement(f, rep, run.Lanes, settings, out)
	meas.classes = how.classes
	h.OnSample, h.SampleEvery = meas.sample, meas.flags.interval
	h.Classes = how.classes
	tctx := ctx
	if c := how.clock; c != nil {
		tctx = c.context(ctx)
		defer c.stop()
		h.Again = &job.Again{Pass: c.pass, Mix: c.mix}
		h.OnSample = func(s transfer.Sample) { meas.sample(s); c.sample(s) }
	}
	started := false
	h.Start = func() {
		started = true
		f.logStart(settings, run.Lanes)
		meas.begin()
		if how.clock != nil {
			how.clock.start()
		}
	}
	defer func() {
		if started {
			runErr = meas.finish(ctx, runErr)
		}
	}()
	sum, err := run.Transfer(tctx, h)
	if how.summary != nil {
		*how.summary = sum
	}
	var cut int64 // objects in flight when the clock ended the run
	switch {
	case how.clock != nil && how.clock.ended(tctx) && ctx.Err() == nil:
		if errors.Is(err, context.Canceled) {
			err = nil
		}
		cut = rep.interrupted()
	case how.clock != nil:
		out.timed = false // the user, not the clock, ended it
	}
	if !started {
		var se *job.SpecError
		if errors.As(err, &se) {
			return usageError(se.Err)
		}
		return err
	}
	rep.close()
	meas.ended(sum)
	var se *job.SpaceError
	if errors.As(err, &se) {
		if sum.Objects+sum.Failed+sum.Skipped > 0 {
			rep.printSummary(out.textOut(f.Factory), sum, out, how.latency, nil, meas.measures)
		}
		return &ExitError{Code: ExitUsage, Err: spaceMessage(se)}
	}
	if err != nil && ctx.Err() == nil && sum.Objects+sum.Failed+sum.Skipped == 0 && !errors.Is(err, s3store.ErrBadListing) && !errors.Is(err, transfer.ErrUnaccounted) {
		return startError(ctx, err)
	}
	// A fleet node interrupted while it lingered for its peers had
	// finished its own run: that is no interruption of the download.
	interrupted := ctx.Err() != nil && !run.Lingered()
	if err == nil && !interrupted && how.empty(run, sum) {
		_, listed, _ := total.totals()
		return emptyError(how.verb, how.source, run.LocalTo != "", listed, rep.selection.line())
	}
	rep.printSummary(out.textOut(f.Factory), sum, out, how.latency, run.ShardReport(), meas.measures)
	switch {
	case interrupted:
		return &ExitError{Code: ExitInterrupted}
	case errors.Is(err, transfer.ErrUnaccounted):
		// Never a success: a key listed and then lost is the worst a
		// run can do, whatever else went right.
		return &ExitError{Code: ExitFailed, Err: err}
	case err != nil:
		return badManifest(err)
	case sum.Failed-cut > 0:
		// Each failed object has had its line on stderr: the count goes
		// to --json's error line only.
		return &ExitError{Code: ExitFailed, Err: said{fmt.Errorf("%d of %s failed", sum.Failed-cut, plural(sum.Failed+sum.Objects+sum.Skipped, "object"))}}
	case rep.archived.Load() > 0:
		return &ExitError{Code: ExitFailed, Err: fmt.Errorf("%s archived and skipped: restore them first", plural(rep.archived.Load(), "object"))}
	}
	return nil
}

// empty says the run selected nothing and may not: no object
// transferred, skipped or failed, without --allow-empty, and not a
// shard whose share is empty of a listing that is not.
func (how jobRun) empty(run *job.Run, sum transfer.Summary) bool {
	if how.source == "" || how.out.allowEmpty || sum.Objects+sum.Failed+sum.Skipped > 0 {
		return false
	}
	if rep := run.ShardReport(); rep != nil && rep.ListingObjects > 0 {
		return false
	}
	return true
}

// spaceMessage says what a destination without room lacks, and what to
// do about it.
func spaceMessage(se *job.SpaceError) error {
	need := humanBytes(se.Need)
	if se.AtLeast {
		need = "at least " + need
	}
	return fmt.Errorf("not enough space in %s: %s still to write, %s free on its file system; make room, or pass --no-space-check to go ahead anyway",
		se.Dest, need, humanBytes(se.Free))
}

// reportDeletes runs remove, which calls report for each file or object
// it deletes (or would delete), and renders them: a JSON line each, a
// line each in a dry run, and a total.
func reportDeletes(f *runEnv, out runOutput, what string, remove func(report func(name string, size int64)) error) error {
	var n, bytes int64
	err := remove(func(name string, size int64) {
		n++
		bytes += size
		if js := out.jsonOut(f.Factory); js != nil {
			writeJSONLine(js, deleteLine{header: newHeader(lineDelete), Name: name, Bytes: size, DryRun: out.dryRun})
		}
		if w := out.textOut(f.Factory); out.dryRun && w != nil {
			fmt.Fprintf(w, "would delete: %s (%s)\n", printable(name), plural(size, "byte"))
		}
	})
	if w := out.textOut(f.Factory); w != nil && n > 0 {
		verb := "deleted"
		if out.dryRun {
			verb = "would delete"
		}
		fmt.Fprintf(w, "%s: %s, %s\n", verb, plural(n, what), plural(bytes, "byte"))
	}
	if err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	return nil
}

// directIO is what a local destination did about direct I/O (nil: dest
// is not a local sink).
func directIO(dest any) func() local.DirectStatus {
	if d, ok := dest.(interface{ DirectIO() local.DirectStatus }); ok {
		return d.DirectIO
	}
	return nil
}
