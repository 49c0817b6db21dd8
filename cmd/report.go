package cmd

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/s3pd/s3pd/internal/job"
	"github.com/s3pd/s3pd/pkg/local"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// reporter renders the engine's events: a progress bar on a terminal,
// one zap line per failed object, and JSON lines with --json.
type reporter struct {
	out io.Writer // human lines; nil with --json
	// failOut is where a failed object's one line goes, as text (nil:
	// through log, as JSON, under --log-format json)
	failOut io.Writer
	dry     bool // --dry-run: list what would happen
	log     *zap.Logger
	json    *json.Encoder // nil without --json
	mu      sync.Mutex    // serialises JSON lines
	bytes   atomic.Int64
	stop    chan struct{}
	done    chan struct{}
	bar     *progressbar.ProgressBar
	// listed, when set, gives the bar its total once the listing ends.
	listed *listedBytes

	// destination, when set, names where an object lands (--json).
	destination func(name string) string
	// directory is the source's bucket when it is a directory bucket.
	directory string
	// direct, when set, says what a local destination did about direct
	// I/O (the summary).
	direct func() local.DirectStatus
	// fleet, when set, says where a --fleet node's bytes came from and
	// went (the summary).
	fleet func() *job.FleetReport
	// localTo: the source is local files, copied to "local" or "s3".
	localTo string
	// noChecksumHint: runOutput's.
	noChecksumHint string
	// upload: the destination is S3 (from files, a stream or another
	// store), so "verified" means the destination was checked, and an
	// interruption keeps uploads, not files.
	upload bool
	// dryVerb is what a dry run would do with each object ("fetch").
	dryVerb string
	// lines says to print a line per object on out (--log-level info or
	// debug): verb (download, upload, copy) names the direction, origin
	// where an object comes from.
	lines  bool
	verb   string
	origin func(transfer.Object) string
	// selection counts what the rules selected of the listing (nil: no
	// rules).
	selection *selection

	failures atomic.Int64
	archived atomic.Int64 // skipped because they must be restored first
	ended    atomic.Int64 // objects that reached a verdict (the bar)
	started  atomic.Int64 // objects begun, done or not (the bar)
	retries  atomic.Int64
	// what a dry run would do, under mu: the objects it would fetch
	// (plan, listed at the end) and skip (skipsBy, by reason)
	wouldFetch, wouldSkip, fetchBytes int64
	plan                              []plannedFetch
	skipsBy                           map[string]int64
	tally                             tally // under mu
	lastRetry                         time.Time
}

// newReporter returns the renderer of one run; listed, when not nil, is
// the decorated source whose listing gives the progress bar its total.
func newReporter(f *Factory, log *zap.Logger, out runOutput, listed *listedBytes) *reporter {
	r := &reporter{log: log, out: out.textOut(f), dry: out.dryRun, listed: listed, localTo: out.localTo, noChecksumHint: out.noChecksumHint, upload: out.upload, dryVerb: cmp.Or(out.dryVerb, "fetch")}
	r.lines = r.out != nil && !r.dry && log.Core().Enabled(zapcore.InfoLevel)
	if !out.logJSON {
		r.failOut = f.IO.ErrOut
	}
	if w := out.jsonOut(f); w != nil {
		r.json = json.NewEncoder(w)
	}
	if f.IO.ErrTTY && !out.quiet && !out.noProgress && !out.dryRun && !out.logJSON {
		r.bar = progressbar.NewOptions64(-1,
			progressbar.OptionSetWriter(f.IO.ErrOut),
			progressbar.OptionShowBytes(true),
			progressbar.OptionSetDescription("s3pd"),
			progressbar.OptionShowCount(),
			progressbar.OptionUseIECUnits(true),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionThrottle(100*time.Millisecond),
			// The line is as wide as the terminal (80 columns when it
			// cannot tell): the bar takes up what the figures leave, so
			// the line does not change width as they do.
			progressbar.OptionFullWidth(),
			progressbar.OptionClearOnFinish(),
			// No spinner goroutine of the library's own: it reads the
			// bar's state without its lock; render below drives the bar.
			progressbar.OptionSetSpinnerChangeInterval(0),
		)
		r.stop, r.done = make(chan struct{}), make(chan struct{})
		go r.render()
	}
	return r
}

// render moves the bar from the atomic byte count, so the hot path never
// takes the bar's lock.
func (r *reporter) render() {
	defer close(r.done)
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	var shown int64
	sized := false
	// The bar shows the byte rate in binary units, a rolling mean of
	// its last ten seconds; the description adds the bit rate in
	// decimal Gbit/s, as network cards are rated, over the same ten
	// seconds, so that the two say the same rate.
	var rate rateWindow
	for {
		select {
		case <-r.stop:
			r.bar.Finish()
			return
		case <-t.C:
			total, objects, complete := r.listed.totals()
			if complete && !sized && total > 0 {
				r.bar.ChangeMax64(total)
				sized = true
			}
			now := r.bytes.Load()
			r.bar.Describe(barDescription(r.ended.Load(), r.started.Load(), objects, complete, rate.gbps(now)))
			r.bar.Add64(now - shown)
			shown = now
		}
	}
}

// rateWindow is the bit rate over the last ten seconds of counts taken
// every 100 ms (the bar's own window).
type rateWindow struct {
	counts [100]int64
	ticks  int
}

// gbps records the count now and returns the rate, in Gbit/s, since
// the count ten seconds ago (since the start, before ten seconds).
func (w *rateWindow) gbps(now int64) float64 {
	i := w.ticks % len(w.counts)
	oldest := w.counts[i]
	w.counts[i] = now
	w.ticks++
	secs := float64(min(w.ticks, len(w.counts))) / 10
	return float64(now-oldest) * 8 / 1e9 / secs
}

// barDescription is the bar's count of objects: those done of those
// listed ("?" until the listing is complete) and those open, whose
// bytes the bar counts before they are done (large objects in parallel
// parts: 3 done at 35% of the bytes is no lag). Numbers are padded to
// the width of the listing's count, so the text keeps its width; the
// bit rate in decimal Gbit/s follows, as network cards are rated.
func barDescription(done, started, listed int64, complete bool, gbps float64) string {
	of := "?"
	if complete {
		of = fmt.Sprint(listed)
	}
	w := max(len(of), len(fmt.Sprint(done)))
	return fmt.Sprintf("%*d/%s obj, %*d open, %4s Gbit/s", w, done, of, w, max(started-done, 0), threeDigits(gbps))
}

func (r *reporter) close() {
	if r.stop != nil {
		close(r.stop)
		<-r.done
	}
}

func (r *reporter) ObjectStarted(transfer.Object)          { r.started.Add(1) }
func (r *reporter) Bytes(n int64)                          { r.bytes.Add(n) }
func (r *reporter) PartDone(transfer.Object, int64, int64) {}

// Retry logs retries as they happen: every one at debug, and at info at
// most one a second, with the count so far, so a storm stays readable.
func (r *reporter) Retry(o transfer.Object, off int64, err error) {
	n := r.retries.Add(1)
	reason := oneLine(err.Error())
	r.log.Debug("retry", logKey(o.Key), zap.Int64("offset", off), zap.String("reason", reason))
	r.mu.Lock()
	now := time.Now()
	loud := now.Sub(r.lastRetry) >= time.Second
	if loud {
		r.lastRetry = now
	}
	r.mu.Unlock()
	if loud {
		r.log.Info("retrying", logKey(o.Key), zap.Int64("offset", off),
			zap.String("reason", reason), zap.Int64("retries_so_far", n))
	}
}

// tally is what the reporter counts of the objects' outcomes, for the
// summary (under reporter.mu).
type tally struct {
	verified, verifiedBytes     int64
	unverified, unverifiedBytes int64
	unverifiedWhy               map[string]int64 // by Verification.Unverified
	partsCheckedBytes           int64            // of the objects unverified as parts-only
	// unverifiedWords are, by reason, the first few distinct details
	// (Verification.Detail): the summary says them when the reason has
	// no hint of its own
	unverifiedWords       map[string][]string
	checksums             map[string]int64 // verified objects by algorithm
	resumed, resumedBytes int64
	interrupted           int64 // ended by an interruption
	kept                  int64 // among them, those kept for resume
	intact                int64 // skipped, read and found intact (--verify-existing)
}

func (r *reporter) ObjectDone(res transfer.Result) {
	status := statusOK
	interrupted := res.Err != nil && errors.Is(res.Err, context.Canceled)
	switch {
	case interrupted:
		// One line for the whole interruption, not one per object.
		status = statusInterrupted
	case res.Err != nil:
		status = statusFailed
		r.failures.Add(1)
		r.sayFailed(res)
	case res.Skipped == transfer.DryRunReason:
		status = statusWouldTransfer
	case res.Skipped != "":
		status = statusSkipped
		if strings.HasPrefix(res.Skipped, "archived") {
			r.archived.Add(1)
			r.log.Warn("object skipped", logKey(res.Object.Key), zap.String("reason", res.Skipped))
			break
		}
		if !r.lines {
			r.log.Info("object skipped", logKey(res.Object.Key), zap.String("reason", res.Skipped))
		}
	}
	r.ended.Add(1)
	if r.lines {
		r.line(res, status)
	}
	r.count(res, status)
	if r.dry {
		r.dryRun(res)
	}
	if r.json == nil {
		return
	}
	line := objectLine{header: newHeader(lineObject), Key: res.Object.Key, Name: res.Object.Name,
		Size: res.Object.Size, Bytes: res.Bytes, Status: status, Reason: res.Skipped,
		ResumedBytes: res.Resumed, Seconds: res.Elapsed.Seconds(), BytesPerSecond: perSecond(res.Bytes, res.Elapsed.Seconds())}
	if r.destination != nil {
		line.Destination = r.destination(res.Object.Name)
	}
	if status == statusOK {
		v := res.Verification
		line.Verification, line.Checksums = v.Status(), v.Checksums
		line.Unverified, line.UnverifiedDetail = v.Unverified, v.Detail
	}
	if res.Err != nil {
		line.Error = oneLine(res.Err.Error())
		line.ErrorCode, line.HTTPStatus = errorCode(res.Err)
	}
	r.mu.Lock()
	r.json.Encode(line)
	r.mu.Unlock()
}

// count adds one object's outcome to the tally.
func (r *reporter) count(res transfer.Result, status string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := &r.tally
	if res.Resumed > 0 {
		t.resumed++
		t.resumedBytes += res.Resumed
	}
	if res.Intact {
		t.intact++
	}
	switch status {
	case statusInterrupted:
		t.interrupted++
		if res.Kept {
			t.kept++
		}
	case statusOK:
		v := res.Verification
		if v.Off {
			return
		}
		if v.Verified() {
			t.verified++
			t.verifiedBytes += max(res.Object.Size, 0)
			if t.checksums == nil {
				t.checksums = map[string]int64{}
			}
			for _, c := range v.Checksums {
				t.checksums[c]++
			}
		} else {
			t.unverified++
			t.unverifiedBytes += max(res.Object.Size, 0)
		}
		if v.Unverified != "" && !v.Verified() { // a check missed beside one made is no reason
			if t.unverifiedWhy == nil {
				t.unverifiedWhy = map[string]int64{}
			}
			t.unverifiedWhy[v.Unverified]++
			if v.Unverified == transfer.UnverifiedPartsOnly {
				t.partsCheckedBytes += max(res.Object.Size, 0)
			}
			t.unverifiedWords = addWords(t.unverifiedWords, v.Unverified, v.Detail)
		}
	}
}

// sayFailed writes a failed object's one line on stderr: plain words
// with the key printable, or a JSON log line under --log-format json.
func (r *reporter) sayFailed(res transfer.Result) {
	reason := oneLine(res.Err.Error())
	if r.failOut == nil {
		r.log.Error("object failed", logKey(res.Object.Key), zap.String("reason", reason))
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(r.failOut, "s3pd: failed: %s: %s\n", printable(res.Object.Key), reason)
}

// maxWords bounds the distinct details the summary keeps of a reason.
const maxWords = 3

// addWords records detail among m's details of reason, once, up to
// maxWords of them.
func addWords(m map[string][]string, reason, detail string) map[string][]string {
	if detail == "" {
		return m
	}
	if m == nil {
		m = map[string][]string{}
	}
	if w := m[reason]; len(w) < maxWords && !slices.Contains(w, detail) {
		m[reason] = append(w, detail)
	}
	return m
}

func (r *reporter) dryRun(res transfer.Result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch fetch := res.Skipped == transfer.DryRunReason; {
	case fetch:
		r.wouldFetch++
		r.fetchBytes += max(res.Object.Size, 0)
		if r.out != nil {
			r.plan = append(r.plan, plannedFetch{key: res.Object.Key, dest: r.destinationOf(res.Object), size: res.Object.Size})
		}
	case res.Skipped != "":
		r.wouldSkip++
		if r.skipsBy == nil {
			r.skipsBy = map[string]int64{}
		}
		r.skipsBy[res.Skipped]++
	}
}

// plannedFetch is one object a dry run would fetch, for its listing.
type plannedFetch struct {
	key, dest string
	size      int64
}

// destinationOf is where o lands, "" when the run keeps nothing.
func (r *reporter) destinationOf(o transfer.Object) string {
	if r.destination == nil {
		return ""
	}
	return r.destination(o.Name)
}

// printDryRun lists what a dry run would fetch, sorted by where each
// object lands, then what it would skip in one line, by reason.
func (r *reporter) printDryRun(w io.Writer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	slices.SortFunc(r.plan, func(a, b plannedFetch) int { return cmp.Or(cmp.Compare(a.dest, b.dest), cmp.Compare(a.key, b.key)) })
	for _, p := range r.plan {
		to := ""
		if p.dest != "" {
			to = " -> " + printable(p.dest)
		}
		fmt.Fprintf(w, "would %s: %s%s (%s)\n", r.dryVerb, printable(p.key), to, plural(p.size, "byte"))
	}
	if r.wouldSkip == 0 {
		return
	}
	var why []string
	for _, reason := range slices.Sorted(maps.Keys(r.skipsBy)) {
		why = append(why, fmt.Sprintf("%d %s", r.skipsBy[reason], printableText(reason)))
	}
	fmt.Fprintf(w, "would skip: %s: %s\n", plural(r.wouldSkip, "object"), strings.Join(why, ", "))
}

// plural is n with its noun, which takes an s unless n is one: "1
// object", "2 objects".
func plural(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// line prints one object's line as the AWS CLI does: "download: s3://b/k
// to DEST/k", "upload: SRC to s3://b/k", "copy: s3://a/k to s3://b/k",
// and "skip: s3://b/k to DEST/k: reason". Failures are the logger's.
func (r *reporter) line(res transfer.Result, status string) {
	verb := r.verb
	switch status {
	case statusOK:
	case statusSkipped:
		verb = "skip"
	default:
		return
	}
	from, to := res.Object.Key, ""
	if r.origin != nil {
		from = r.origin(res.Object)
	}
	if r.destination != nil {
		// --benchmark keeps nothing: its lines name no destination.
		to = " to " + printable(r.destination(res.Object.Name))
	}
	why := ""
	if status == statusSkipped {
		why = ": " + printableText(res.Skipped)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(r.out, "%s: %s%s%s\n", cmp.Or(verb, "download"), printable(from), to, why)
}
