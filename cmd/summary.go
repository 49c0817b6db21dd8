package cmd

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/s3pd/s3pd/pkg/local"
	"github.com/s3pd/s3pd/pkg/report"
	"github.com/s3pd/s3pd/pkg/shard"
	"github.com/s3pd/s3pd/pkg/transfer"
	"go.uber.org/zap"
)

// summaryLine is the last --json line of a transfer.
type summaryLine struct {
	header
	DryRun bool `json:"dry_run,omitempty"`
	// Objects counts those transferred whole; WouldTransfer those a dry
	// run would transfer.
	Objects int64 `json:"objects"`
	Failed  int64 `json:"failed"`
	Skipped int64 `json:"skipped"`
	// Listed counts the objects listed, Excluded those the rules took
	// out: Listed = Objects (or WouldTransfer) + Skipped + Excluded +
	// Failed + Interrupted in every run that was not interrupted.
	Listed             int64   `json:"listed"`
	Excluded           int64   `json:"excluded"`
	Interrupted        int64   `json:"interrupted"`
	KeptForResume      int64   `json:"kept_for_resume"`
	WouldTransfer      int64   `json:"would_transfer,omitempty"`
	WouldTransferBytes int64   `json:"would_transfer_bytes,omitempty"`
	Bytes              int64   `json:"bytes"`
	Seconds            float64 `json:"seconds"`
	BytesPerSecond     float64 `json:"bytes_per_second"`
	ObjectsPerSecond   float64 `json:"objects_per_second"`
	// Gibps, GiBps and Gbps are derived from BytesPerSecond: Gibit/s,
	// GiB/s and decimal Gbit/s.
	Gibps             float64          `json:"gibps"`
	GiBps             float64          `json:"gib_per_s"`
	Gbps              float64          `json:"gbps"`
	VerifiedObjects   int64            `json:"verified_objects"`
	VerifiedBytes     int64            `json:"verified_bytes"`
	UnverifiedObjects int64            `json:"unverified_objects"`
	UnverifiedBytes   int64            `json:"unverified_bytes"`
	Checksums         map[string]int64 `json:"checksums,omitempty"`
	UnverifiedReasons map[string]int64 `json:"unverified_reasons,omitempty"`
	// PartsCheckedBytes is the size of the objects unverified as
	// "parts-only": the destination checked each part on arrival.
	PartsCheckedBytes int64   `json:"parts_checked_bytes,omitempty"`
	ResumedObjects    int64   `json:"resumed_objects"`
	ResumedBytes      int64   `json:"resumed_bytes"`
	Requests          int64   `json:"requests"`
	Retries           int64   `json:"retries"`
	Hedged            int64   `json:"hedged"`
	Splits            int64   `json:"splits"`
	Ranges            int64   `json:"ranges"`
	GETsPerRange      float64 `json:"gets_per_range"`
	OverfetchBytes    int64   `json:"overfetch_bytes"`
	TTFB50ms          float64 `json:"ttfb_p50_ms"`
	TTFB99ms          float64 `json:"ttfb_p99_ms"`
	PeakRSS           int64   `json:"peak_rss_kib"`
	// EmulatorInProcess: the peak includes the embedded emulator's memory.
	EmulatorInProcess bool          `json:"emulator_in_process,omitempty"`
	Lanes             []laneSummary `json:"nics,omitempty"`
	// DirectIO is what a local destination did about direct I/O (on,
	// off, fallback), DirectIOReason why it is off or fell back.
	DirectIO       string `json:"direct_io,omitempty"`
	DirectIOReason string `json:"direct_io_reason,omitempty"`
	// Shard is this process's shard of the listing (--shard).
	Shard *shard.Report `json:"shard,omitempty"`
	// Selection is what the rules selected of the listing.
	Selection *selectionLine `json:"selection,omitempty"`
	// fleetSummary is a --fleet node's: where its bytes came from and
	// went (its fields are flat, fleet_*).
	*fleetSummary
	runMeasures // percentiles, CPU, time series, verdict (measure.go)
}

type laneSummary struct {
	Name           string  `json:"name"`
	Bytes          int64   `json:"bytes"`
	BytesPerSecond float64 `json:"bytes_per_second"`
	Gibps          float64 `json:"gibps"`
	Gbps           float64 `json:"gbps"`
}

// summary builds the summary line from the engine's summary and what the
// reporter counted.
func (r *reporter) summary(s transfer.Summary, out runOutput) summaryLine {
	secs := s.Elapsed.Seconds()
	r.mu.Lock()
	t := r.tally
	line := summaryLine{header: newHeader(lineSummary), DryRun: r.dry,
		Objects: s.Objects, Failed: s.Failed - t.interrupted, Skipped: s.Skipped, Interrupted: t.interrupted, KeptForResume: t.kept,
		Listed: s.Listed, Excluded: s.Excluded,
		Bytes: s.Bytes, Seconds: secs, BytesPerSecond: perSecond(s.Bytes, secs),
		ObjectsPerSecond: perSecond(s.Objects, secs),
		Gibps:            gibps(s.Bytes, secs), GiBps: perSecond(s.Bytes, secs) / (1 << 30), Gbps: gbps(s.Bytes, secs),
		VerifiedObjects: t.verified, VerifiedBytes: t.verifiedBytes,
		UnverifiedObjects: t.unverified, UnverifiedBytes: t.unverifiedBytes,
		Checksums: maps.Clone(t.checksums), UnverifiedReasons: maps.Clone(t.unverifiedWhy), PartsCheckedBytes: t.partsCheckedBytes,
		ResumedObjects: t.resumed, ResumedBytes: t.resumedBytes,
		Requests: s.Requests, Retries: s.Retries, Hedged: s.Hedged, Splits: s.Splits,
		Ranges: s.Ranges, GETsPerRange: perRange(s), OverfetchBytes: s.Overfetch,
		TTFB50ms: ms(s.TTFB50), TTFB99ms: ms(s.TTFB99), PeakRSS: peakRSS(),
		EmulatorInProcess: out.embedded && out.server == nil, Selection: r.selection.line()}
	if r.dry {
		line.Skipped = r.wouldSkip
		line.WouldTransfer, line.WouldTransferBytes = r.wouldFetch, r.fetchBytes
	}
	r.mu.Unlock()
	if r.direct != nil {
		st := r.direct()
		line.DirectIO, line.DirectIOReason = st.State, st.Reason
	}
	if r.fleet != nil {
		line.fleetSummary = newFleetSummary(r.fleet())
	}
	if len(s.Lanes) > 1 {
		for _, l := range s.Lanes {
			line.Lanes = append(line.Lanes, laneSummary{Name: l.Name, Bytes: l.Bytes,
				BytesPerSecond: perSecond(l.Bytes, secs), Gibps: gibps(l.Bytes, secs), Gbps: gbps(l.Bytes, secs)})
		}
	}
	return line
}

// perRange is the requests sent per range fetched: 1 when none was
// taken over or retried.
func perRange(s transfer.Summary) float64 {
	if s.Ranges == 0 {
		return 0
	}
	return float64(s.Requests) / float64(s.Ranges)
}

func perSecond(n int64, secs float64) float64 {
	if secs <= 0 {
		return 0
	}
	return float64(n) / secs
}

func gibps(b int64, secs float64) float64 { return perSecond(b, secs) * 8 / (1 << 30) }

// gbps is the decimal bit rate, as network cards are rated.
func gbps(b int64, secs float64) float64 { return perSecond(b, secs) * 8 / 1e9 }

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// printSummary writes the human summary to w (none when nil) and the
// JSON summary line where the JSON lines go; sr is the shard's report,
// nil without --shard. measures (nil: none) computes the run's extra
// figures, the verdict's survey of the machine among them: only when a
// summary is written, so a quiet run without --json ends when its
// transfer does.
func (r *reporter) printSummary(w io.Writer, s transfer.Summary, out runOutput, latency bool, sr *shard.Report, measures func() runMeasures) {
	for _, c := range s.WindowPhases {
		r.log.Debug("window", zap.Duration("at", c.At), zap.Stringer("phase", c.Phase), zap.Int("window", c.Window))
	}
	if w == nil && r.json == nil {
		return
	}
	line := r.summary(s, out)
	line.Shard = sr
	if measures != nil {
		line.runMeasures = measures()
	}
	m := line.runMeasures
	if r.json != nil {
		r.mu.Lock()
		r.json.Encode(line)
		r.mu.Unlock()
	}
	switch {
	case w == nil:
		return
	case out.logJSON:
		// Every line on stderr is JSON: the summary is its JSON line.
		writeJSONLine(w, line)
		return
	}
	defer func() {
		if sr != nil {
			printShard(w, sr)
		}
	}()
	if latency && !line.DryRun {
		printSteady(w, m) // bench's headline, first
	}
	printSelection(w, line.Selection)
	if line.DryRun {
		r.printDryRun(w)
		fmt.Fprintf(w, "dry run: would %s %s (%s), skip %d\n", cmp.Or(r.dryVerb, "fetch"), plural(line.WouldTransfer, "object"), humanBytes(line.WouldTransferBytes), line.Skipped)
		return
	}
	objects := fmt.Sprintf("objects: %d transferred, %d skipped, %d failed", line.Objects, line.Skipped, line.Failed)
	if intact := r.intact(); intact > 0 {
		objects = fmt.Sprintf("objects: %d transferred, %d checked intact, %d skipped, %d failed", line.Objects, intact, line.Skipped-intact, line.Failed)
	}
	switch {
	case line.Interrupted > 0 && out.timed:
		objects += fmt.Sprintf(", %d in flight at the end", line.Interrupted)
	case line.Interrupted > 0:
		objects += fmt.Sprintf(", %d interrupted", line.Interrupted)
	}
	objects += "; " + listedText(line)
	fmt.Fprintf(w, "%s (%s objects/s)\n", objects, humanCount(line.ObjectsPerSecond))
	fmt.Fprintf(w, "bytes: %s in %s, %s\n", humanBytes(line.Bytes), humanSeconds(line.Seconds), humanRate(line.BytesPerSecond))
	if r.directory != "" {
		fmt.Fprintln(w, directoryLine(r.directory))
	}
	r.printVerification(w, line)
	if line.DirectIO != "" && (line.DirectIO != local.DirectStateOff || line.DirectIOReason != "") {
		direct := "direct I/O: " + line.DirectIO
		if line.DirectIOReason != "" {
			direct += " (" + line.DirectIOReason + ")"
		}
		fmt.Fprintln(w, direct)
	}
	if line.fleetSummary != nil {
		printFleet(w, line.fleetSummary)
	}
	if line.ResumedObjects > 0 {
		fmt.Fprintf(w, "resumed: %s, %s kept from an earlier run\n", plural(line.ResumedObjects, "object"), humanBytes(line.ResumedBytes))
	}
	if !out.timed {
		r.printInterrupted(w, line) // a bench's clock cuts objects, it keeps none
	}
	fmt.Fprintf(w, "requests: %d, retries: %d (%d SlowDowns), hedged: %d; in flight: mean %.1f, peak %d; window %s\n",
		line.Requests, line.Retries, s.SlowDowns, line.Hedged, s.InFlightMean, s.InFlightPeak, windowText(s))
	switch {
	case line.Ranges > 0 && r.upload && r.localTo != "":
		// An upload of files: its ranges are the parts it sent or kept,
		// read from disk, not GETs.
		fmt.Fprintf(w, "parts: %d\n", line.Ranges)
	case line.Ranges > 0:
		fmt.Fprintf(w, "ranges: %d (%d tail pieces), %.3f GETs per range, overfetch: %s\n",
			line.Ranges, line.Splits, line.GETsPerRange, humanBytes(line.OverfetchBytes))
	}
	if latency {
		fmt.Fprintf(w, "time to first byte: p50 %.1f ms, p90 %.1f ms, p99 %.1f ms, p99.9 %.1f ms\n", line.TTFB50ms, m.TTFB90ms, line.TTFB99ms, m.TTFB999ms)
		fmt.Fprintf(w, "request time: p50 %.1f ms, p90 %.1f ms, p99 %.1f ms, p99.9 %.1f ms\n", m.Request50ms, m.Request90ms, m.Request99ms, m.Request999ms)
		where := ""
		switch {
		case line.EmulatorInProcess:
			where = " (this process: the embedded emulator's included)"
		case out.server != nil:
			where = " (the client's; the emulator's is on the cpu line)"
		}
		fmt.Fprintf(w, "peak memory: %s%s\n", humanBytes(line.PeakRSS*1024), where)
		printMeasures(w, m)
	}
	for _, l := range line.Lanes {
		fmt.Fprintf(w, "nic %s: %s, %s\n", l.Name, humanBytes(l.Bytes), humanRate(l.BytesPerSecond))
	}
}

// interrupted is how many objects an interruption (or bench's clock)
// ended before they were whole.
func (r *reporter) interrupted() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.tally.interrupted
}

// listedText says how many objects were listed: "2 listed", "5 listed,
// 3 excluded by --include/--exclude".
func listedText(line summaryLine) string {
	t := fmt.Sprintf("%d listed", line.Listed)
	if line.Excluded > 0 {
		t += fmt.Sprintf(", %d excluded by --include/--exclude", line.Excluded)
	}
	return t
}

// printInterrupted says what an interrupted run kept for a rerun, in a
// download's words or an upload's.
func (r *reporter) printInterrupted(w io.Writer, line summaryLine) {
	kept, lost := "kept for resume", "had no part on disk to keep: a rerun fetches %s whole"
	if r.upload {
		kept = "kept as incomplete uploads with their parts in S3"
		lost = "had no part in S3 to keep: a rerun sends %s whole"
	}
	if line.KeptForResume > 0 {
		fmt.Fprintf(w, "partial: %s %s: run the same command again to resume them\n", plural(line.KeptForResume, "object"), kept)
	}
	if n := line.Interrupted - line.KeptForResume; n > 0 {
		them := "them"
		if n == 1 {
			them = "it"
		}
		fmt.Fprintf(w, "interrupted: %s "+lost+"\n", plural(n, "object"), them)
	}
}

// intact is how many skipped objects were read and found intact.
func (r *reporter) intact() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.tally.intact
}

// unverifiedHints say, for each reason, what would check the objects.
var unverifiedHints = map[string]string{
	transfer.UnverifiedMD5Only:    "--verify full checks their MD5 ETags",
	transfer.UnverifiedComposite:  "their checksums are of parts, not of the bytes (uploaded in parts without a full-object checksum)",
	transfer.UnverifiedNoChecksum: "upload them with a checksum (aws s3 cp --checksum-algorithm CRC64NVME, or s3pd copy) to have them checked",
}

// localHints replace the advice on objects with no checksum when the
// source is local files, by where they were copied: the advice to upload
// with a checksum is for objects already in S3.
var localHints = map[string]string{
	"local": "local files carry no checksum to check the copy against",
}

// uploadHints replace the advice for uploads, where it is the
// destination's answers that lack a checksum.
var uploadHints = map[string]string{
	transfer.UnverifiedNoChecksum:   "the server returned no checksum of what it stored (it may check none): only the size was checked",
	transfer.UnverifiedLookupFailed: "the HEAD that checks what the server stored failed: --json says why",
}

// hint returns what would check the objects unverified for reason why.
func (r *reporter) hint(why string) string {
	if r.upload {
		return uploadHints[why]
	}
	if r.noChecksumHint != "" && why == transfer.UnverifiedNoChecksum {
		return r.noChecksumHint
	}
	if h, ok := localHints[r.localTo]; ok && why == transfer.UnverifiedNoChecksum {
		return h
	}
	return unverifiedHints[why]
}

// words are the details the objects unverified for reason why gave,
// one printable line.
func (r *reporter) words(why string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.tally.unverifiedWords[why]
	for i := range w {
		w[i] = oneLine(w[i])
	}
	return strings.Join(w, "; ")
}

// printVerification says how many objects were verified, by which
// checksums, and how many could not be and why.
func (r *reporter) printVerification(w io.Writer, line summaryLine) {
	if line.VerifiedObjects+line.UnverifiedObjects == 0 {
		return
	}
	var algs []string
	for _, a := range slices.Sorted(maps.Keys(line.Checksums)) {
		algs = append(algs, fmt.Sprintf("%s %d", a, line.Checksums[a]))
	}
	v := fmt.Sprintf("verified: %s (%s)", plural(line.VerifiedObjects, "object"), humanBytes(line.VerifiedBytes))
	if len(algs) > 0 {
		v += " by " + strings.Join(algs, ", ")
	}
	if r.upload {
		v += ", the destination's checksum of what it stored"
	}
	if line.VerifiedObjects > 0 {
		fmt.Fprintln(w, v)
	}
	// Objects whose every part the destination checked on arrival, as
	// its answers showed: not verified whole, but checked.
	parts := line.UnverifiedReasons[transfer.UnverifiedPartsOnly]
	if parts > 0 {
		fmt.Fprintf(w, "checked by S3: %s (%s), each part's checksum on arrival\n", plural(parts, "object"), humanBytes(line.PartsCheckedBytes))
	}
	if len(line.UnverifiedReasons) == 0 || parts == line.UnverifiedObjects {
		return
	}
	fmt.Fprintf(w, "unverified: %s (%s)\n", plural(line.UnverifiedObjects-parts, "object"), humanBytes(line.UnverifiedBytes-line.PartsCheckedBytes))
	for _, why := range slices.Sorted(maps.Keys(line.UnverifiedReasons)) {
		if why == transfer.UnverifiedPartsOnly {
			continue
		}
		hint := r.hint(why)
		if hint == "" {
			hint = r.words(why) // what the objects said, in words
		}
		if hint != "" {
			hint = ": " + hint
		}
		fmt.Fprintf(w, "  %d %s%s\n", line.UnverifiedReasons[why], why, hint)
	}
}

// humanBytes writes n bytes with a binary unit: "512 B", "1.5 KiB",
// "64.0 MiB", "1.50 GiB".
func humanBytes(n int64) string {
	const units = "KMGTPE"
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	v := float64(n)
	i := -1
	for v >= 1024 && i+1 < len(units) {
		v /= 1024
		i++
	}
	return fmt.Sprintf("%s %ciB", threeDigits(v), units[i])
}

// humanRate writes a rate in bytes per second as every rate people read
// is written (report.Rate): MiB/s or GiB/s, and Gbit/s (10^9 bits) from
// 1 MiB/s up.
func humanRate(bps float64) string { return report.Rate(bps) }

// humanCount writes a count per second with three significant digits.
func humanCount(v float64) string { return threeDigits(v) }

// humanSeconds writes a duration in seconds: "812 ms", "3.41 s", "2m05s".
func humanSeconds(secs float64) string {
	switch {
	case secs < 1:
		return fmt.Sprintf("%.0f ms", secs*1000)
	case secs < 60:
		return threeDigits(secs) + " s"
	}
	d := time.Duration(secs * float64(time.Second)).Round(time.Second)
	return d.String()
}

// threeDigits formats v with three significant digits (at least the
// integer part): 1.23, 12.3, 123, 1234.
func threeDigits(v float64) string {
	switch {
	case v < 10:
		return fmt.Sprintf("%.2f", v)
	case v < 100:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

// windowText says where the window of requests in flight settled and
// why: "64 (knee)", "256 (budget)".
func windowText(s transfer.Summary) string {
	return fmt.Sprintf("%d (%s)", s.Window, s.WindowStop)
}
