package cmd

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"
	"go.uber.org/zap"

	"github.com/s3pd/s3pd/pkg/shard"
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

	failures atomic.Int64
	archived atomic.Int64 // skipped because they must be restored first
	// what a dry run would do, under mu
	wouldFetch, wouldSkip, fetchBytes int64
}

// newReporter returns the renderer of one run; listed, when not nil, is
// the decorated source whose listing gives the progress bar its total.
func newReporter(f *Factory, log *zap.Logger, out outputFlags, listed *listedBytes) *reporter {
	r := &reporter{log: log, out: out.textOut(f), dry: out.dryRun, listed: listed}
	if w := out.jsonOut(f); w != nil {
		r.json = json.NewEncoder(w)
	}
	if f.IO.ErrTTY && !out.quiet && !out.dryRun {
		r.bar = progressbar.NewOptions64(-1,
			progressbar.OptionSetWriter(f.IO.ErrOut),
			progressbar.OptionShowBytes(true),
			progressbar.OptionSetDescription("s3pd"),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
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
			if total, complete := r.listed.total(); complete && !sized && total > 0 {
				r.bar.ChangeMax64(total)
				sized = true
			}
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

func (r *reporter) Retry(o transfer.Object, off int64, err error) {
	r.log.Debug("retry", zap.String("key", o.Key), zap.Int64("offset", off), zap.Error(err))
}

// objectLine is one --json line per finished object.
type objectLine struct {
	Type     string  `json:"type"`
	Key      string  `json:"key"`
	Name     string  `json:"name"`
	Bytes    int64   `json:"bytes"`
	Status   string  `json:"status"`
	Error    string  `json:"error,omitempty"`
	Reason   string  `json:"reason,omitempty"`
	Verified string  `json:"verified,omitempty"`
	Seconds  float64 `json:"seconds"`
}

func (r *reporter) ObjectDone(res transfer.Result) {
	status := "ok"
	switch {
	case res.Err != nil:
		status = "failed"
		r.failures.Add(1)
		r.log.Error("object failed", zap.String("key", res.Object.Key), zap.String("reason", oneLine(res.Err.Error())))
	case res.Skipped != "":
		status = "skipped"
		if strings.HasPrefix(res.Skipped, "archived") {
			r.archived.Add(1)
			r.log.Warn("object skipped", zap.String("key", res.Object.Key), zap.String("reason", res.Skipped))
			break
		}
		r.log.Info("object skipped", zap.String("key", res.Object.Key), zap.String("reason", res.Skipped))
	}
	if r.dry {
		r.dryRun(res)
	}
	if r.json == nil {
		return
	}
	line := objectLine{Type: "object", Key: res.Object.Key, Name: res.Object.Name, Bytes: res.Bytes,
		Status: status, Reason: res.Skipped, Verified: res.Verified, Seconds: res.Elapsed.Seconds()}
	if res.Err != nil {
		line.Error = oneLine(res.Err.Error())
	}
	r.mu.Lock()
	r.json.Encode(line)
	r.mu.Unlock()
}

// deleteLine is one --json line per file removed by --delete.
type deleteLine struct {
	Type   string `json:"type"`
	Name   string `json:"name"`
	Bytes  int64  `json:"bytes"`
	DryRun bool   `json:"dry_run,omitempty"`
}

func writeJSONLine(w io.Writer, v any) { json.NewEncoder(w).Encode(v) }

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
		fmt.Fprintf(r.out, "would fetch: %s (%d bytes)\n", res.Object.Key, res.Object.Size)
	case res.Skipped != "":
		fmt.Fprintf(r.out, "would skip: %s (%s)\n", res.Object.Key, res.Skipped)
	}
}

// printDryRun writes the totals of a dry run, and the shard's report
// when there is one.
func (r *reporter) printDryRun(sr *shard.Report) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.json != nil {
		line := map[string]any{"type": "dry-run", "fetch": r.wouldFetch, "fetch_bytes": r.fetchBytes, "skip": r.wouldSkip, "peak_rss_kib": peakRSS()}
		if sr != nil {
			line["shard"] = sr
		}
		r.json.Encode(line)
	}
	if r.out == nil {
		return
	}
	fmt.Fprintf(r.out, "dry run: would fetch %d objects (%d bytes), skip %d\n", r.wouldFetch, r.fetchBytes, r.wouldSkip)
	if sr != nil {
		printShard(r.out, sr)
	}
}

// summaryLine is the last --json line.
type summaryLine struct {
	Type     string  `json:"type"`
	Objects  int64   `json:"objects"`
	Failed   int64   `json:"failed"`
	Skipped  int64   `json:"skipped"`
	Bytes    int64   `json:"bytes"`
	Seconds  float64 `json:"seconds"`
	Gibps    float64 `json:"gibps"`
	GiBps    float64 `json:"gib_per_s"`
	Requests int64   `json:"requests"`
	Retries  int64   `json:"retries"`
	TTFB50ms float64 `json:"ttfb_p50_ms"`
	TTFB99ms float64 `json:"ttfb_p99_ms"`
	PeakRSS  int64   `json:"peak_rss_kib"`
	// EmulatorInProcess: the peak includes the embedded emulator's memory.
	EmulatorInProcess bool          `json:"emulator_in_process,omitempty"`
	Lanes             []laneSummary `json:"nics,omitempty"`
	// Shard is this process's shard of the listing (--shard).
	Shard *shard.Report `json:"shard,omitempty"`
}

type laneSummary struct {
	Name  string  `json:"name"`
	Bytes int64   `json:"bytes"`
	Gibps float64 `json:"gibps"`
}

func newSummaryLine(s transfer.Summary) summaryLine {
	secs := s.Elapsed.Seconds()
	line := summaryLine{Type: "summary", Objects: s.Objects, Failed: s.Failed, Skipped: s.Skipped,
		Bytes: s.Bytes, Seconds: secs, Gibps: gibps(s.Bytes, secs), GiBps: gibPerSec(s.Bytes, secs),
		Requests: s.Requests, Retries: s.Retries,
		TTFB50ms: ms(s.TTFB50), TTFB99ms: ms(s.TTFB99), PeakRSS: peakRSS()}
	if len(s.Lanes) > 1 {
		for _, l := range s.Lanes {
			line.Lanes = append(line.Lanes, laneSummary{Name: l.Name, Bytes: l.Bytes, Gibps: gibps(l.Bytes, secs)})
		}
	}
	return line
}

func gibps(b int64, secs float64) float64 {
	if secs <= 0 {
		return 0
	}
	return float64(b) * 8 / (1 << 30) / secs
}

func gibPerSec(b int64, secs float64) float64 {
	if secs <= 0 {
		return 0
	}
	return float64(b) / (1 << 30) / secs
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// printSummary writes the human summary to w and the JSON summary line
// to js; either may be nil.
func printSummary(w, js io.Writer, s transfer.Summary, out outputFlags, latency bool, sr *shard.Report) {
	line := newSummaryLine(s)
	line.EmulatorInProcess = out.embedded
	line.Shard = sr
	if js != nil {
		json.NewEncoder(js).Encode(line)
	}
	if w == nil {
		return
	}
	fmt.Fprintf(w, "objects: %d transferred, %d skipped, %d failed\n", line.Objects, line.Skipped, line.Failed)
	fmt.Fprintf(w, "bytes: %d (%.3f GiB) in %.3f s\n", line.Bytes, float64(line.Bytes)/(1<<30), line.Seconds)
	fmt.Fprintf(w, "throughput: %.4f Gibps (%.3f GiB/s)\n", line.Gibps, line.GiBps)
	if latency {
		fmt.Fprintf(w, "requests: %d, retries: %d\n", line.Requests, line.Retries)
		fmt.Fprintf(w, "time to first byte: p50 %.1f ms, p99 %.1f ms\n", line.TTFB50ms, line.TTFB99ms)
		where := ""
		if line.EmulatorInProcess {
			where = " (this process: the embedded emulator's included)"
		}
		fmt.Fprintf(w, "peak memory: %.1f MiB%s\n", float64(line.PeakRSS)/1024, where)
	}
	for _, l := range line.Lanes {
		fmt.Fprintf(w, "nic %s: %d bytes, %.4f Gibps\n", l.Name, l.Bytes, l.Gibps)
	}
	if sr != nil {
		printShard(w, sr)
	}
}
