package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/s3pd/s3pd/pkg/local"
	"github.com/s3pd/s3pd/pkg/transfer"
)

func TestHumanUnits(t *testing.T) {
	for _, tt := range []struct {
		got, want string
	}{
		{humanBytes(0), "0 B"},
		{humanBytes(1000), "1000 B"},
		{humanBytes(1536), "1.50 KiB"},
		{humanBytes(64 << 20), "64.0 MiB"},
		{humanBytes(3 << 30), "3.00 GiB"},
		{humanBytes(1234 << 30), "1.21 TiB"},
		{humanRate(0), "0 B/s"},
		{humanRate(512 << 20), "512 MiB/s (4.29 Gbit/s)"},
		{humanSeconds(0.25), "250 ms"},
		{humanSeconds(3.456), "3.46 s"},
		{humanSeconds(125), "2m5s"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

// The summary uses adaptive units, objects per second, retries, how the
// objects were verified (each failure is said on stderr, not here).
func TestHumanSummary(t *testing.T) {
	r := &reporter{log: zap.NewNop()}
	ok := transfer.Result{Object: transfer.Object{Key: "a", Size: 2 << 20}, Bytes: 2 << 20,
		Verification: transfer.Verification{Checksums: []string{"crc64nvme"}}}
	md5only := transfer.Result{Object: transfer.Object{Key: "b", Size: 100}, Bytes: 100,
		Verification: transfer.Verification{Unverified: transfer.UnverifiedMD5Only}}
	bad := transfer.Result{Object: transfer.Object{Key: "c", Size: 10}, Err: errors.New("404 NoSuchKey")}
	for _, res := range []transfer.Result{ok, md5only, bad} {
		r.ObjectDone(res)
	}
	var b strings.Builder
	r.printSummary(&b, transfer.Summary{Listed: 4, Excluded: 1, Objects: 2, Failed: 1, Bytes: 2<<20 + 100, Elapsed: 2 * time.Second, Requests: 5, Retries: 3,
		Window: 48, WindowStop: transfer.WindowKnee, WindowKnee: 48}, runOutput{}, false, nil, nil)
	out := b.String()
	for _, want := range []string{
		"objects: 2 transferred, 0 skipped, 1 failed; 4 listed, 1 excluded by --include/--exclude (1.00 objects/s)",
		"bytes: 2.00 MiB in 2.00 s, 1.00 MiB/s (0.01 Gbit/s)",
		"verified: 1 object (2.00 MiB) by crc64nvme 1",
		"1 md5-only: --verify full checks their MD5 ETags",
		"requests: 5, retries: 3",
		"window 48 (knee)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	// Each failure is said once, on stderr, as it happens: no recap.
	if strings.Contains(out, "NoSuchKey") || strings.Contains(out, "failed: ") {
		t.Errorf("summary repeats the failure:\n%s", out)
	}
	if strings.Contains(out, "0.000") {
		t.Errorf("summary has a zero with three decimals:\n%s", out)
	}
}

// TestDryRunListing: a dry run lists what it would fetch sorted by
// where each object lands, whatever order the objects end in, and what
// it would skip in one line by reason, counts singular when one.
func TestDryRunListing(t *testing.T) {
	var out strings.Builder
	f := &Factory{IO: &IOStreams{Out: &out, ErrOut: &strings.Builder{}}}
	r := newReporter(f, zap.NewNop(), runOutput{outputFlags: outputFlags{dryRun: true}}, nil)
	r.destination = func(name string) string { return "/data/" + name }
	fetch := func(name string, size int64) transfer.Result {
		return transfer.Result{Object: transfer.Object{Key: "p/" + name, Name: name, Size: size}, Skipped: transfer.DryRunReason}
	}
	skip := func(name, why string) transfer.Result {
		return transfer.Result{Object: transfer.Object{Key: "p/" + name, Name: name, Size: 1}, Skipped: why}
	}
	for _, res := range []transfer.Result{fetch("c", 3), skip("s1", "unchanged (size and mtime)"), fetch("a", 1),
		skip("s2", "unchanged (size and mtime)"), fetch("b/x", 2<<20), skip("m/", "directory marker: would create directory")} {
		r.ObjectDone(res)
	}
	r.printSummary(&out, transfer.Summary{}, runOutput{outputFlags: outputFlags{dryRun: true}}, false, nil, nil)
	want := `would fetch: p/a -> /data/a (1 byte)
would fetch: p/b/x -> /data/b/x (2097152 bytes)
would fetch: p/c -> /data/c (3 bytes)
would skip: 3 objects: 1 directory marker: would create directory, 2 unchanged (size and mtime)
dry run: would fetch 3 objects (2.00 MiB), skip 3
`
	if out.String() != want {
		t.Errorf("dry run printed\n%s\nwant\n%s", out.String(), want)
	}
}

// TestSingularCounts: a count of one takes the singular.
func TestSingularCounts(t *testing.T) {
	r := &reporter{log: zap.NewNop()}
	r.ObjectDone(transfer.Result{Object: transfer.Object{Key: "a", Size: 5}, Bytes: 5, Verification: transfer.Verification{Checksums: []string{"crc64nvme"}}})
	r.ObjectDone(transfer.Result{Object: transfer.Object{Key: "b", Size: 5}, Err: errors.New("403 AccessDenied")})
	r.ObjectDone(transfer.Result{Object: transfer.Object{Key: "c", Size: 5}, Err: context.Canceled})
	var b strings.Builder
	r.printSummary(&b, transfer.Summary{Objects: 1, Failed: 2, Bytes: 5, Elapsed: time.Second}, runOutput{}, false, nil, nil)
	for _, want := range []string{"verified: 1 object (5 B)", "interrupted: 1 object had no part on disk to keep: a rerun fetches it whole"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
	for _, tt := range []struct {
		n    int64
		want string
	}{{0, "0 objects"}, {1, "1 object"}, {2, "2 objects"}} {
		if got := plural(tt.n, "object"); got != tt.want {
			t.Errorf("plural(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

// TestSingularCountsInChecks: bench compare and shards check say one
// round, one problem, one file.
func TestSingularCountsInChecks(t *testing.T) {
	dir := t.TempDir()
	write := func(name, line string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(line+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	round := write("a.json", `{"schema":"s3pd/1","type":"summary","bytes":100,"seconds":1,"gibps":1}`)
	shard := write("s.json", `{"schema":"s3pd/1","type":"summary","failed":1,"shard":{"version":2,"id":"0/1","objects":1,"bytes":1,"hash":"00000000000000000000000000000000","listing_objects":1,"listing_bytes":1,"listing_hash":"00000000000000000000000000000000","share":1}}`)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "compare", round, round}, "A (1 round)  B (1 round)"},
		{[]string{"shards", "check", shard}, "1 object failed"},
		{[]string{"shards", "check", shard}, "s3pd: 1 problem in 1 summary file\n"},
	} {
		var out, errOut bytes.Buffer
		Execute(context.Background(), &IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, "test", tt.args)
		if !strings.Contains(out.String()+errOut.String(), tt.want) {
			t.Errorf("%q: got %q, want %q in it", tt.args, out.String()+errOut.String(), tt.want)
		}
	}
}

// TestIntactCountedApart: --verify-existing's files found intact are
// counted as such, not as skipped.
func TestIntactCountedApart(t *testing.T) {
	r := &reporter{log: zap.NewNop()}
	for _, k := range []string{"a", "b"} {
		r.ObjectDone(transfer.Result{Object: transfer.Object{Key: k, Size: 5}, Skipped: "unchanged (size and mtime); verified crc64nvme", Intact: true})
	}
	r.ObjectDone(transfer.Result{Object: transfer.Object{Key: "c", Size: 5}, Skipped: "exists (--no-clobber)"})
	var b strings.Builder
	r.printSummary(&b, transfer.Summary{Skipped: 3, Elapsed: time.Second}, runOutput{}, false, nil, nil)
	if want := "objects: 0 transferred, 2 checked intact, 1 skipped, 0 failed"; !strings.Contains(b.String(), want) {
		t.Errorf("summary lacks %q:\n%s", want, b.String())
	}
}

// TestQuietRunComputesNoMeasures: with no summary to write (--quiet,
// no --json) the run's measures, the machine's survey among them, are
// not computed; with a summary to write they are, and printed.
func TestQuietRunComputesNoMeasures(t *testing.T) {
	calls := 0
	measures := func() runMeasures {
		calls++
		return runMeasures{CPUSeconds: 1.5, Verdict: "a verdict"}
	}
	r := &reporter{log: zap.NewNop()}
	r.printSummary(nil, transfer.Summary{Objects: 1, Bytes: 1, Elapsed: time.Second}, runOutput{}, true, nil, measures)
	if calls != 0 {
		t.Errorf("a quiet run computed its measures %d times, want none", calls)
	}
	var js strings.Builder
	r.json = json.NewEncoder(&js)
	r.printSummary(nil, transfer.Summary{Objects: 1, Bytes: 1, Elapsed: time.Second}, runOutput{}, true, nil, measures)
	if calls != 1 || !strings.Contains(js.String(), `"verdict":"a verdict"`) {
		t.Errorf("--json: measures computed %d times, line %s; want once, with the verdict", calls, js.String())
	}
	r.json = nil
	var b strings.Builder
	r.printSummary(&b, transfer.Summary{Objects: 1, Bytes: 1, Elapsed: time.Second}, runOutput{}, true, nil, measures)
	if calls != 2 || !strings.Contains(b.String(), "verdict: a verdict") {
		t.Errorf("summary: measures computed %d times, text:\n%s\nwant twice, with the verdict", calls, b.String())
	}
}

// TestUploadSummarySaysWhatTheDestinationChecked: an upload's summary
// says, per object, what the destination's answers showed it checked:
// its checksum of the whole object ("verified"), each part's on arrival
// ("checked by S3"), or nothing but the size ("unverified", never the
// advice to upload with a checksum). An empty file, checked like any
// other, changes none of it.
func TestUploadSummarySaysWhatTheDestinationChecked(t *testing.T) {
	const mib = 1 << 20
	verified := transfer.Verification{Checksums: []string{"crc64nvme"}}
	parts := transfer.Verification{Unverified: transfer.UnverifiedPartsOnly}
	none := transfer.Verification{Unverified: transfer.UnverifiedNoChecksum}
	type object struct {
		v    transfer.Verification
		size int64
	}
	tests := []struct {
		name    string
		objects []object
		want    []string
		forbid  []string
	}{
		{"whole objects checked, an empty one among them", []object{{verified, mib}, {verified, mib}, {verified, 0}},
			[]string{"verified: 3 objects (2.00 MiB) by crc64nvme 3, the destination's checksum of what it stored\n"},
			[]string{"unverified", "checked by S3"}},
		{"parts checked", []object{{parts, mib}, {parts, mib}},
			[]string{"checked by S3: 2 objects (2.00 MiB), each part's checksum on arrival\n"},
			[]string{"unverified", "verified: 0"}},
		{"nothing echoed", []object{{none, mib}, {none, mib}},
			[]string{"unverified: 2 objects (2.00 MiB)\n", "2 no-checksum: the server returned no checksum of what it stored"},
			[]string{"checked by S3", "upload them with a checksum"}},
		{"mixed", []object{{verified, mib}, {parts, mib}, {none, 0}},
			[]string{"verified: 1 object (1.00 MiB)", "checked by S3: 1 object (1.00 MiB)", "unverified: 1 object (0 B)\n"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := runOutput{localTo: "s3", upload: true}
			r := &reporter{log: zap.NewNop(), localTo: out.localTo, upload: out.upload}
			var total int64
			for i, o := range tt.objects {
				total += o.size
				r.ObjectDone(transfer.Result{Object: transfer.Object{Key: fmt.Sprint(i), Size: o.size}, Bytes: o.size, Verification: o.v})
			}
			var b strings.Builder
			r.printSummary(&b, transfer.Summary{Objects: int64(len(tt.objects)), Bytes: total, Elapsed: time.Second, Ranges: 3}, out, false, nil, nil)
			if !strings.Contains(b.String(), "parts: 3\n") || strings.Contains(b.String(), "GETs per range") {
				t.Errorf("an upload's summary speaks of GETs, not parts:\n%s", b.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("summary lacks %q:\n%s", w, b.String())
				}
			}
			for _, f := range tt.forbid {
				if strings.Contains(b.String(), f) {
					t.Errorf("summary has %q:\n%s", f, b.String())
				}
			}
		})
	}
}

// syncBuffer is a strings.Builder safe for the bar's goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// On a terminal the bar shows objects and bytes done of the total, the
// rate in one pair of units (MiB/s and decimal Gbit/s) and the time left.
func TestProgressBarShowsDoneOfTotal(t *testing.T) {
	// A bubble: the bar's ticker runs on the fake clock, so a second of
	// frames passes at once and the test waits for no real time.
	synctest.Test(t, func(t *testing.T) {
		var errOut syncBuffer
		f := &Factory{IO: &IOStreams{Out: &strings.Builder{}, ErrOut: &errOut, ErrTTY: true}}
		listed := &listedBytes{}
		for range 4 {
			listed.Listed(transfer.Object{Size: 8 << 20})
		}
		listed.ListingDone()
		r := newReporter(f, zap.NewNop(), runOutput{}, listed)
		r.Bytes(12 << 20)
		r.ObjectDone(transfer.Result{Object: transfer.Object{Key: "a", Size: 8 << 20}, Bytes: 8 << 20})
		time.Sleep(time.Second) // ten frames, on the bubble's clock
		synctest.Wait()
		r.close()
		out := errOut.String()
		for _, want := range []string{"1/4 obj, ", " Gbit/s", "12/32 MiB", "MiB/s", "37%"} {
			if !strings.Contains(out, want) {
				t.Errorf("progress bar lacks %q: %q", want, out)
			}
		}
	})
}

// The summary says what a local destination did about direct I/O: on,
// or off or fallback with the reason; plain off says nothing.
func TestHumanSummaryDirectIO(t *testing.T) {
	for _, tt := range []struct {
		st   local.DirectStatus
		want string
	}{
		{local.DirectStatus{State: local.DirectStateOn}, "direct I/O: on\n"},
		{local.DirectStatus{State: local.DirectStateFallback, Reason: "open with O_DIRECT: invalid argument"}, "direct I/O: fallback (open with O_DIRECT: invalid argument)\n"},
		{local.DirectStatus{State: local.DirectStateOff, Reason: "auto: no object of 64 MiB or more"}, "direct I/O: off (auto: no object of 64 MiB or more)\n"},
		{local.DirectStatus{State: local.DirectStateOff}, ""},
	} {
		r := &reporter{log: zap.NewNop(), direct: func() local.DirectStatus { return tt.st }}
		var b strings.Builder
		r.printSummary(&b, transfer.Summary{Objects: 1, Bytes: 1, Elapsed: time.Second}, runOutput{}, false, nil, nil)
		got := ""
		for _, l := range strings.SplitAfter(b.String(), "\n") {
			if strings.HasPrefix(l, "direct I/O") {
				got += l
			}
		}
		if got != tt.want {
			t.Errorf("%+v: summary says %q, want %q", tt.st, got, tt.want)
		}
		if line := r.summary(transfer.Summary{}, runOutput{}); line.DirectIO != tt.st.State || line.DirectIOReason != tt.st.Reason {
			t.Errorf("%+v: --json says %q, %q", tt.st, line.DirectIO, line.DirectIOReason)
		}
	}
}

// TestProgressBarKeepsItsWidth: the bar's line keeps one width as its
// figures change (bytes, rate, objects done), and it counts the objects
// open, whose bytes it shows before they are done.
func TestProgressBarKeepsItsWidth(t *testing.T) {
	synctest.Test(t, func(t *testing.T) { progressBarKeepsItsWidth(t) })
}

// progressBarKeepsItsWidth runs in a bubble: the figures change every
// 15 ms and the bar draws every 100 ms, on the fake clock.
func progressBarKeepsItsWidth(t *testing.T) {
	var errOut syncBuffer
	f := &Factory{IO: &IOStreams{Out: &strings.Builder{}, ErrOut: &errOut, ErrTTY: true}}
	listed := &listedBytes{}
	for range 157 {
		listed.Listed(transfer.Object{Size: 64 << 20})
	}
	listed.ListingDone()
	r := newReporter(f, zap.NewNop(), runOutput{}, listed)
	for i := range 40 {
		r.ObjectStarted(transfer.Object{})
		r.Bytes(int64(i) * 3 << 20)
		if i%7 == 0 {
			r.ObjectDone(transfer.Result{Object: transfer.Object{Key: fmt.Sprint(i), Size: 64 << 20}, Bytes: 64 << 20})
		}
		time.Sleep(15 * time.Millisecond) // the pace of the figures, on the bubble's clock
	}
	time.Sleep(time.Second) // frames of the last figures
	synctest.Wait()
	r.close()
	widths := map[int]string{}
	for _, frame := range strings.Split(errOut.String(), "\r") {
		if strings.TrimSpace(frame) != "" {
			widths[utf8.RuneCountInString(frame)] = frame
		}
	}
	if len(widths) != 1 {
		t.Errorf("the bar's line took %d widths, want one: %v", len(widths), widths)
	}
	if !strings.Contains(errOut.String(), "6/157 obj,  34 open") {
		t.Errorf("the bar does not count the objects open: %q", errOut.String())
	}
}

// TestShardsCheckAccounts: shards check refuses a shard whose summary
// lists more objects than it has verdicts for, or other than its share,
// as an internal error, and takes one whose counts agree.
func TestShardsCheckAccounts(t *testing.T) {
	dir := t.TempDir()
	shard := func(name, counts string) string {
		p := filepath.Join(dir, name)
		line := `{"schema":"s3pd/1","type":"summary",` + counts + `,"shard":{"version":2,"id":"0/1","objects":2,"bytes":2,"hash":"00000000000000000000000000000000","listing_objects":2,"listing_bytes":2,"listing_hash":"00000000000000000000000000000000","share":1}}`
		if err := os.WriteFile(p, []byte(line+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tt := range []struct {
		counts, want string
		code         int
	}{
		{`"objects":1,"skipped":1,"listed":2`, "ok: 1 shard cover listing", ExitOK},
		{`"objects":1,"skipped":1`, "ok: 1 shard cover listing", ExitOK}, // an older s3pd: no listed count
		{`"objects":1,"skipped":0,"listed":2`, "internal error: 2 listed, 1 transferred + 0 skipped + 0 excluded + 0 failed + 0 interrupted = 1", ExitFailed},
		{`"objects":1,"skipped":0,"listed":1`, "internal error: 1 listed, but its share of the split holds 2", ExitFailed},
	} {
		var out, errOut bytes.Buffer
		code := Execute(context.Background(), &IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, "test", []string{"shards", "check", shard("s.json", tt.counts)})
		if code != tt.code || !strings.Contains(out.String(), tt.want) {
			t.Errorf("%s: exit %d, %q; want exit %d and %q", tt.counts, code, out.String()+errOut.String(), tt.code, tt.want)
		}
	}
}

// TestUnverifiedReasonsInWords: a reason without a hint of its own is
// said with what the objects gave, in words, each distinct detail once
// and a few at most; a reason with a hint keeps its hint.
func TestUnverifiedReasonsInWords(t *testing.T) {
	r := &reporter{log: zap.NewNop()}
	bad := func(key, detail string) transfer.Result {
		return transfer.Result{Object: transfer.Object{Key: key, Size: 9}, Bytes: 9,
			Verification: transfer.Verification{Unverified: transfer.UnverifiedUnsupported, Detail: detail}}
	}
	four := `the server's CRC64NVME checksum "mf7UyA==" is 4 bytes, not 8`
	for i, d := range []string{four, four, "a", "b", "c"} {
		r.ObjectDone(bad(fmt.Sprint(i), d))
	}
	r.ObjectDone(transfer.Result{Object: transfer.Object{Key: "m", Size: 9}, Bytes: 9,
		Verification: transfer.Verification{Unverified: transfer.UnverifiedMD5Only, Detail: "its only checksum is its MD5 ETag"}})
	var b strings.Builder
	r.printSummary(&b, transfer.Summary{Objects: 6, Bytes: 54, Elapsed: time.Second}, runOutput{}, false, nil, nil)
	for _, want := range []string{
		`  5 unsupported: the server's CRC64NVME checksum "mf7UyA==" is 4 bytes, not 8; a; b` + "\n",
		"  1 md5-only: --verify full checks their MD5 ETags\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
}

// TestUnaccountedIsItsOwnError: a run whose counts disagree is reported
// with its own error code, wrapped or not.
func TestUnaccountedIsItsOwnError(t *testing.T) {
	err := fmt.Errorf("get: %w", &transfer.UnaccountedError{Where: "the job's listing", Listed: 2, Transferred: 1})
	if code, _ := errorCode(err); code != codeUnaccounted {
		t.Errorf("error code %q, want %q", code, codeUnaccounted)
	}
	if !strings.Contains(err.Error(), "internal error in the job's listing: 1 listed object without a verdict") {
		t.Errorf("message %q does not name the difference", err)
	}
}

// TestBarRateWindow: the description's rate is over the bar's own ten
// seconds, so a burst in the last second does not make the two rates
// disagree.
func TestBarRateWindow(t *testing.T) {
	var w rateWindow
	var got float64
	now := int64(0)
	for range 150 { // 15 s at 125 MB/s (1 Gbit/s), counted every 100 ms
		now += 12_500_000
		got = w.gbps(now)
	}
	if got < 0.99 || got > 1.01 {
		t.Fatalf("steady 1 Gbit/s reads %.3f", got)
	}
	for range 10 { // one second at 10 Gbit/s
		now += 125_000_000
		got = w.gbps(now)
	}
	if got < 1.8 || got > 2.0 { // (9 s x 1 + 1 s x 10) / 10 s
		t.Errorf("after a one-second burst: %.2f Gbit/s, want the ten-second mean, 1.9", got)
	}
}
