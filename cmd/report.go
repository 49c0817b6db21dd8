package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"
	"go.uber.org/zap"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// reporter renders the engine's events: a progress bar on a terminal,
// one zap line per failed object, and JSON lines with --json.
type reporter struct {
	out   io.Writer // human lines; nil with --json
	dry   bool      // --dry-run: list what would happen
	log   *zap.Logger
	json  *json.Encoder // nil without --json
	mu    sync.Mutex    // serialises JSON lines
	bytes atomic.Int64
	stop  chan struct{}
	done  chan struct{}
	bar   *progressbar.ProgressBar
	// listed, when set, gives the bar its total once the listing ends.
	listed *listedBytes

	// destination, when set, names where an object lands (--json).
	destination func(name string) string
	// localTo: the source is local files, copied to "local" or "s3".
	localTo string

	failures atomic.Int64
	archived atomic.Int64 // skipped because they must be restored first
	ended    atomic.Int64 // objects that reached a verdict (the bar)
	retries  atomic.Int64
	// what a dry run would do, under mu
	wouldFetch, wouldSkip, fetchBytes int64
	tally                             tally // under mu
	lastRetry                         time.Time
}

// newReporter returns the renderer of one run; listed, when not nil, is
// the decorated source whose listing gives the progress bar its total.
func newReporter(f *Factory, log *zap.Logger, out outputFlags, listed *listedBytes) *reporter {
	r := &reporter{log: log, out: out.textOut(f), dry: out.dryRun, listed: listed, localTo: out.localTo}
	if w := out.jsonOut(f); w != nil {
		r.json = json.NewEncoder(w)
	}
	if f.IO.ErrTTY && !out.quiet && !out.dryRun && !out.logJSON {
		r.bar = progressbar.NewOptions64(-1,
			progressbar.OptionSetWriter(f.IO.ErrOut),
			progressbar.OptionShowBytes(true),
			progressbar.OptionSetDescription("s3pd"),
			progressbar.OptionShowCount(),
			progressbar.OptionUseIECUnits(true),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionThrottle(100*time.Millisecond),
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
			of := "?"
			if complete {
				of = fmt.Sprint(objects)
			}
			r.bar.Describe(fmt.Sprintf("%d/%s objects", r.ended.Load(), of))
			now := r.bytes.Load()
			r.bar.Add64(now - shown)
			shown = now
		}
	}
}

func (r *reporter) close() {
	if r.stop != nil {
		close(r.stop)
		<-r.done
	}
}

func (r *reporter) ObjectStarted(transfer.Object)          {}
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
	checksums                   map[string]int64 // verified objects by algorithm
	resumed, resumedBytes       int64
	interrupted                 int64 // ended by an interruption
	kept                        int64 // among them, those kept for resume
	failed                      []failure
	failedCount                 int64
}

// failure is one failed object, for the recap at the end.
type failure struct{ key, reason string }

// maxRecap bounds the failures the human summary lists.
const maxRecap = 10

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
		r.log.Error("object failed", logKey(res.Object.Key), zap.String("reason", oneLine(res.Err.Error())))
	case res.Skipped == transfer.DryRunReason:
		status = statusWouldTransfer
	case res.Skipped != "":
		status = statusSkipped
		if strings.HasPrefix(res.Skipped, "archived") {
			r.archived.Add(1)
			r.log.Warn("object skipped", logKey(res.Object.Key), zap.String("reason", res.Skipped))
			break
		}
		r.log.Info("object skipped", logKey(res.Object.Key), zap.String("reason", res.Skipped))
	}
	r.ended.Add(1)
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
	switch status {
	case statusInterrupted:
		t.interrupted++
		if res.Kept {
			t.kept++
		}
	case statusFailed:
		t.failedCount++
		if len(t.failed) < maxRecap {
			t.failed = append(t.failed, failure{res.Object.Key, oneLine(res.Err.Error())})
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
		if v.Unverified != "" {
			if t.unverifiedWhy == nil {
				t.unverifiedWhy = map[string]int64{}
			}
			t.unverifiedWhy[v.Unverified]++
		}
	}
}

func (r *reporter) dryRun(res transfer.Result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fetch := res.Skipped == transfer.DryRunReason
	if fetch {
		r.wouldFetch++
		r.fetchBytes += max(res.Object.Size, 0)
	} else if res.Skipped != "" {
		r.wouldSkip++
	}
	if r.out == nil {
		return
	}
	switch {
	case fetch:
		fmt.Fprintf(r.out, "would fetch: %s (%d bytes)\n", printable(res.Object.Key), res.Object.Size)
	case res.Skipped != "":
		fmt.Fprintf(r.out, "would skip: %s (%s)\n", printable(res.Object.Key), printable(res.Skipped))
	}
}
