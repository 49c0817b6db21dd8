package transfer_test

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/s3pd/s3pd/pkg/transfer"
	"github.com/s3pd/s3pd/pkg/transfer/transfertest"
)

// These tests drive the engine only through its public API (New, Run,
// Options and the interfaces it consumes) over transfertest's in-memory
// adapters, one optional interface or option at a time.

const part = 1000

// fast retries without waiting.
var fast = transfer.Backoff{Base: time.Microsecond, Cap: time.Microsecond, MaxAttempts: 4}

// run runs the engine from src into sink and returns the summary and
// what the observer saw.
func run(t *testing.T, src transfer.Source, sink transfer.Sink, opts transfer.Options) (transfer.Summary, *transfertest.Recorder) {
	t.Helper()
	return runCtx(t, context.Background(), src, sink, opts)
}

func runCtx(t *testing.T, ctx context.Context, src transfer.Source, sink transfer.Sink, opts transfer.Options) (transfer.Summary, *transfertest.Recorder) {
	t.Helper()
	rec := transfertest.NewRecorder()
	opts.Observer, opts.Listing = rec, rec
	if opts.PartSize == 0 {
		opts.PartSize = part
	}
	if opts.Backoff.MaxAttempts == 0 {
		opts.Backoff = fast
	}
	e, err := transfer.New([]transfer.Lane{{Name: "mem", Source: src}}, sink, opts)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := e.Run(ctx)
	if err != nil && ctx.Err() == nil {
		t.Fatalf("Run: %v", err)
	}
	return sum, rec
}

// result returns key's outcome, failing the test when none was reported.
func result(t *testing.T, rec *transfertest.Recorder, key string) transfer.Result {
	t.Helper()
	r, ok := rec.Result(key)
	if !ok {
		t.Fatalf("no outcome reported for %s", key)
	}
	return r
}

// wantCommitted fails unless sink holds exactly src's bytes of each key.
func wantCommitted(t *testing.T, sink *transfertest.Sink, src *transfertest.Source, keys ...string) {
	t.Helper()
	got := sink.Committed()
	for _, k := range keys {
		if c, ok := got[k]; !ok || !bytes.Equal(c.Data, src.Data(k)) {
			t.Errorf("%s: committed %v with %d bytes, want the source's %d", k, ok, len(c.Data), len(src.Data(k)))
		}
	}
}

func TestNewWithoutLanesFails(t *testing.T) {
	if _, err := transfer.New(nil, transfertest.NewSink(), transfer.Options{}); err == nil {
		t.Fatal("New with no lane: no error")
	}
}

func TestCheckerSkipsOnlyUnchanged(t *testing.T) {
	src := transfertest.NewSource()
	same := src.Add("same", transfertest.Data("same", 3*part))
	src.Add("changed", transfertest.Data("changed", 3*part))
	src.Add("new", transfertest.Data("new", 10))
	sink := transfertest.CheckSink{Sink: transfertest.NewSink()}
	sink.Put(same, src.Data("same"))
	sink.Put(transfer.Object{Name: "changed", Size: 3 * part, ETag: `"old"`}, make([]byte, 3*part))
	sum, rec := run(t, src, sink, transfer.Options{})
	if sum.Skipped != 1 || sum.Objects != 2 || sum.Failed != 0 {
		t.Fatalf("summary %+v, want 1 skipped and 2 transferred", sum)
	}
	if r := result(t, rec, "same"); r.Skipped != "unchanged" || r.Err != nil {
		t.Errorf("same: skipped %q, error %v; want skipped as unchanged", r.Skipped, r.Err)
	}
	for _, o := range src.Opens() {
		if o.Key == "same" {
			t.Errorf("an object the sink skipped was requested: %+v", o)
		}
	}
	wantCommitted(t, sink.Sink, src, "same", "changed", "new")
}

func TestVerifyExistingRefetchesOnlyDamagedFiles(t *testing.T) {
	src := transfertest.NewSource()
	good := src.Add("good", transfertest.Data("good", 2500))
	bad := src.Add("bad", transfertest.Data("bad", 2500))
	sink := transfertest.CheckSink{Sink: transfertest.NewSink()}
	sink.Put(good, src.Data("good"))
	sink.Put(bad, bytes.Clone(src.Data("bad")))
	sink.Damage("bad", 1234)
	sum, rec := run(t, src, sink, transfer.Options{VerifyExisting: true})
	if sum.Skipped != 1 || sum.Objects != 1 {
		t.Fatalf("summary %+v, want the good file skipped and the damaged one fetched", sum)
	}
	if r := result(t, rec, "good"); !strings.Contains(r.Skipped, "verified crc64nvme") || !r.Intact {
		t.Errorf("good: skipped %q, intact %v, want it verified by crc64nvme and intact", r.Skipped, r.Intact)
	}
	wantCommitted(t, sink.Sink, src, "good", "bad")
}

// TestVerifyExistingWithoutChecksum: a file already there whose object
// has no checksum is verified by the object's MD5 ETag, and kept but said
// unverified when the ETag is no MD5 either.
func TestVerifyExistingWithoutChecksum(t *testing.T) {
	for _, tt := range []struct {
		name, etag, want string
		intact           bool
	}{
		{"an MD5 ETag", "", "verified md5", true},
		{"no MD5 ETag", `"not-an-md5"`, "not verified: the object has no checksum", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := transfertest.NewSource()
			o := src.Add("k", transfertest.Data("k", 100))
			o.Checksums, o.ChecksumAlgorithm = nil, ""
			o.ETag = cmp.Or(tt.etag, o.ETag)
			src.Put(o, src.Data("k"))
			sink := transfertest.CheckSink{Sink: transfertest.NewSink()}
			sink.Put(o, src.Data("k"))
			_, rec := run(t, src, sink, transfer.Options{VerifyExisting: true})
			r := result(t, rec, "k")
			if !strings.Contains(r.Skipped, tt.want) {
				t.Errorf("skipped %q, want %q", r.Skipped, tt.want)
			}
			if r.Intact != tt.intact {
				t.Errorf("Intact %v, want %v", r.Intact, tt.intact)
			}
		})
	}
}

func TestVerifyExistingLooksTheChecksumUp(t *testing.T) {
	src := &transfertest.ChecksumSource{Source: transfertest.NewSource()}
	o := src.Add("k", transfertest.Data("k", 100))
	listed := o
	listed.Checksums, listed.ETag = nil, `"x-2"`
	src.Put(listed, src.Data("k"))
	src.Lookup = func(string) (map[string]string, error) { return o.Checksums, nil }
	sink := transfertest.CheckSink{Sink: transfertest.NewSink()}
	sink.Put(listed, src.Data("k"))
	_, rec := run(t, src, sink, transfer.Options{VerifyExisting: true})
	if r := result(t, rec, "k"); !strings.Contains(r.Skipped, "verified crc64nvme") || src.Lookups() != 1 {
		t.Errorf("skipped %q after %d lookups, want one lookup and crc64nvme verified", r.Skipped, src.Lookups())
	}
}

func TestDryRunTransfersNothing(t *testing.T) {
	src := transfertest.NewSource()
	same := src.Add("same", transfertest.Data("same", 10))
	src.Add("a", transfertest.Data("a", 3*part))
	sink := transfertest.CheckSink{Sink: transfertest.NewSink()}
	sink.Put(same, src.Data("same"))
	sum, rec := run(t, src, sink, transfer.Options{DryRun: true})
	if sum.Skipped != 2 || sum.Objects != 0 || sum.Bytes != 0 || sum.Requests != 0 {
		t.Fatalf("summary %+v, want 2 skipped and nothing requested", sum)
	}
	if r := result(t, rec, "a"); r.Skipped != transfer.DryRunReason {
		t.Errorf("a: skipped %q, want %q", r.Skipped, transfer.DryRunReason)
	}
	if r := result(t, rec, "same"); r.Skipped != "unchanged" {
		t.Errorf("same: skipped %q, want the sink's reason", r.Skipped)
	}
	if n := len(src.Opens()); n != 0 || sink.Creates() != 0 {
		t.Errorf("%d requests and %d files created, want none", n, sink.Creates())
	}
}

// interrupted runs a journaling transfer of object k, size bytes, one
// part at a time, interrupted when it asks for the third part, and
// returns its source, without the fault, and its sink, holding what the
// run journaled.
func interrupted(t *testing.T, size int, verify transfer.Verify) (*transfertest.Source, *transfertest.Sink) {
	t.Helper()
	src := transfertest.NewSource()
	src.Add("k", transfertest.Data("k", size))
	sink := transfertest.NewSink()
	sink.Journal = true
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	src.Fault = func(key string, off, n int64, attempt int) error {
		if off >= 2*part {
			cancel()
			return ctx.Err()
		}
		return nil
	}
	runCtx(t, ctx, src, sink, transfer.Options{Threads: 1, Verify: verify})
	src.Fault = nil
	return src, sink
}

func TestJournalResumesOnlyMissingParts(t *testing.T) {
	for _, verify := range []transfer.Verify{transfer.VerifyAuto, transfer.VerifyOff} {
		t.Run(fmt.Sprint("verify=", verify), func(t *testing.T) {
			src, sink := interrupted(t, 5*part+1, verify)
			if sink.Suspends() != 1 {
				t.Fatalf("%d files kept for resume, want 1", sink.Suspends())
			}
			parts, ok := sink.Journaled("k")
			if !ok || len(parts) != 2 || parts[0] != part || parts[part] != part {
				t.Fatalf("journaled parts %v, want the first two", parts)
			}
			before := len(src.Opens())
			sum, rec := run(t, src, sink, transfer.Options{Threads: 1, Verify: verify})
			r := result(t, rec, "k")
			if r.Err != nil || r.Resumed != 2*part || r.Bytes != 3*part+1 || sum.Bytes != 3*part+1 {
				t.Fatalf("result %+v, summary bytes %d; want 2 parts resumed and the other 3001 bytes fetched", r, sum.Bytes)
			}
			for _, o := range src.Opens()[before:] {
				if o.Off < 2*part {
					t.Errorf("the resumed run asked for %+v again", o)
				}
			}
			if verify == transfer.VerifyAuto && !r.Verification.Verified() {
				t.Errorf("verification %v, want the resumed object verified", r.Verification)
			}
			wantCommitted(t, sink, src, "k")
		})
	}
}

func TestJournalResumesAPartInterruptedHalfWay(t *testing.T) {
	src := transfertest.NewSource()
	src.Add("k", transfertest.Data("k", 4*part))
	sink := transfertest.NewSink()
	sink.Journal = true
	// The first run is interrupted while the third part's body is
	// arriving: 400 of its bytes were written.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	src.Break = func(key string, off int64, attempt int) int64 {
		if off == 2*part {
			cancel()
			return 400
		}
		return -1
	}
	src.Fault = func(key string, off, n int64, attempt int) error {
		if off > 2*part {
			return context.Canceled
		}
		return nil
	}
	runCtx(t, ctx, src, sink, transfer.Options{Threads: 1})
	if parts, _ := sink.Journaled("k"); parts[2*part] != 400 {
		t.Fatalf("journaled %v, want 400 bytes of the part at %d", parts, 2*part)
	}
	src.Break, src.Fault = nil, nil
	before := len(src.Opens())
	_, rec := run(t, src, sink, transfer.Options{Threads: 1})
	if r := result(t, rec, "k"); r.Err != nil || r.Resumed != 2*part+400 || !r.Verification.Verified() {
		t.Fatalf("result %+v, want 2400 bytes resumed and the object verified", r)
	}
	want := []transfertest.Range{{Key: "k", Off: 2*part + 400, N: part - 400}, {Key: "k", Off: 3 * part, N: part}}
	if got := src.Opens()[before:]; !slices.Equal(got, want) {
		t.Errorf("the second run asked for %+v, want %+v", got, want)
	}
	wantCommitted(t, sink, src, "k")
}

func TestJournaledPartDamagedIsFetchedAgain(t *testing.T) {
	src, sink := interrupted(t, 4*part, transfer.VerifyAuto)
	sink.Damage("k", part+7) // the second part's bytes change on disk
	before := len(src.Opens())
	_, rec := run(t, src, sink, transfer.Options{Threads: 1})
	if r := result(t, rec, "k"); r.Err != nil || r.Resumed != part {
		t.Fatalf("result %+v, want only the intact first part resumed", r)
	}
	var offs []int64
	for _, o := range src.Opens()[before:] {
		offs = append(offs, o.Off)
	}
	if !slices.Equal(offs, []int64{part, 2 * part, 3 * part}) {
		t.Errorf("the second run asked for %v, want the damaged part and the rest", offs)
	}
	wantCommitted(t, sink, src, "k")
}

func TestJournalOfAnotherVersionIsIgnored(t *testing.T) {
	src, sink := interrupted(t, 4*part, transfer.VerifyAuto)
	src.Add("k", transfertest.Data("k2", 4*part)) // rewritten meanwhile
	_, rec := run(t, src, sink, transfer.Options{Threads: 1})
	if r := result(t, rec, "k"); r.Err != nil || r.Resumed != 0 {
		t.Fatalf("result %+v, want the new version fetched whole", r)
	}
	wantCommitted(t, sink, src, "k")
}

func TestPartWriterTakesWholeParts(t *testing.T) {
	src := transfertest.NewSource()
	src.Add("big", transfertest.Data("big", 3*part+5))
	src.Add("small", transfertest.Data("small", 10))
	// Every part's first body breaks half way: the part writer fails it,
	// and the retry asks for the whole part again, not the rest.
	src.Break = func(key string, off int64, attempt int) int64 {
		if attempt == 1 {
			return 300
		}
		return -1
	}
	sink := transfertest.NewSink()
	sink.Parts = true
	sum, rec := run(t, src, sink, transfer.Options{})
	if sum.Failed != 0 || sum.Objects != 2 {
		t.Fatalf("summary %+v, want both objects", sum)
	}
	for _, o := range src.Opens() {
		if o.Key == "big" && o.N != part && o.N != 5 {
			t.Errorf("request %+v: a part writer's retry must ask for the whole part", o)
		}
	}
	if r := result(t, rec, "big"); !r.Verification.Verified() {
		t.Errorf("big: verification %v, want the bytes the part writer read verified", r.Verification)
	}
	if got := rec.PartsDone("big"); got != 4 {
		t.Errorf("big: %d parts reported done, want 4", got)
	}
	wantCommitted(t, sink, src, "big", "small")
}

func TestDatalessBodiesAreNeitherReadNorSummed(t *testing.T) {
	data := transfertest.NewSource()
	data.Add("big", transfertest.Data("big", 3*part+5))
	data.Add("small", transfertest.Data("small", 10))
	sink := transfertest.NewSink()
	sink.Parts = true
	limiter := transfer.NewRateLimiter(1) // one byte a second: a copy moves no byte through the client
	sum, rec := run(t, transfertest.RefSource{Source: data}, sink, transfer.Options{Limiter: limiter})
	if sum.Failed != 0 || sum.Objects != 2 || sum.Bytes != 3*part+15 {
		t.Fatalf("summary %+v, want both objects, counted as moved", sum)
	}
	for _, k := range []string{"big", "small"} {
		if r := result(t, rec, k); r.Err != nil || errors.Is(r.Err, transfertest.ErrRefRead) {
			t.Errorf("%s: %v", k, r.Err)
		}
	}
	wantCommitted(t, sink, data, "big", "small")
}

func TestRefresherTransfersAChangedObjectAnew(t *testing.T) {
	src := transfertest.NewSource()
	stale := src.Add("k", transfertest.Data("k", 3*part))
	src.Add("k", transfertest.Data("k, rewritten", 4*part))
	sink := transfertest.NewSink()
	lister := &transfertest.Lister{Objects: []transfer.Object{stale}, Source: src}
	sum, rec := run(t, src, sink, transfer.Options{Lister: lister})
	if r := result(t, rec, "k"); r.Err != nil || sum.Objects != 1 || lister.Refreshes() != 1 {
		t.Fatalf("result %v, summary %+v, %d refreshes; want the new version after one look-up", r.Err, sum, lister.Refreshes())
	}
	wantCommitted(t, sink, src, "k")
}

// plainLister lists as Lister does, but cannot look objects up again.
type plainLister struct{ l *transfertest.Lister }

func (p plainLister) List(ctx context.Context, emit func(transfer.Object) error) error {
	return p.l.List(ctx, emit)
}

func TestChangedObjectFailsWithoutRefresher(t *testing.T) {
	src := transfertest.NewSource()
	stale := src.Add("k", transfertest.Data("k", 3*part))
	src.Add("k", transfertest.Data("k, rewritten", 3*part))
	sink := transfertest.NewSink()
	sum, rec := run(t, src, sink, transfer.Options{Lister: plainLister{&transfertest.Lister{Objects: []transfer.Object{stale}}}})
	if r := result(t, rec, "k"); !errors.Is(r.Err, transfer.ErrModified) || sum.Failed != 1 {
		t.Fatalf("error %v, want ErrModified", r.Err)
	}
	if len(sink.Committed()) != 0 || sink.Aborts() != 1 {
		t.Errorf("%d committed, %d aborted; want the file aborted", len(sink.Committed()), sink.Aborts())
	}
}

func TestRateLimiterHoldsTheTransferBack(t *testing.T) {
	// 200 KB at 1 MB/s, with a 100 ms burst, take at least 100 ms; the
	// bound is generous and one-sided, so load cannot fail it.
	const size, rate = 200_000, 1_000_000
	for _, parts := range []bool{false, true} {
		t.Run(fmt.Sprint("partwriter=", parts), func(t *testing.T) {
			src := transfertest.NewSource()
			src.Add("k", transfertest.Data("k", size))
			sink := transfertest.NewSink()
			sink.Parts = parts
			start := time.Now()
			sum, _ := run(t, src, sink, transfer.Options{PartSize: 20_000, Limiter: transfer.NewRateLimiter(rate)})
			if d := time.Since(start); d < 90*time.Millisecond || sum.Objects != 1 {
				t.Fatalf("%d objects in %s, want 1 in at least 100ms", sum.Objects, d)
			}
			wantCommitted(t, sink, src, "k")
		})
	}
	t.Run("cancelled", func(t *testing.T) {
		l := transfer.NewRateLimiter(1)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := l.WaitN(ctx, 1000); !errors.Is(err, context.Canceled) {
			t.Fatalf("WaitN past the rate with a cancelled context: %v", err)
		}
	})
}

func TestVerifyFullChecksMD5ETags(t *testing.T) {
	tests := []struct {
		name   string
		size   int64
		etag   string // "" keeps the MD5 ETag
		sink   func() *transfertest.Sink
		enc    bool
		want   string // Verification.String() contains, or the error
		failed bool
	}{
		{name: "whole object", size: 10, want: "md5"},
		{name: "ranged, read back", size: 3*part + 1, want: "md5"},
		{name: "wrong etag", size: 3*part + 1, etag: `"00000000000000000000000000000000"`, failed: true},
		{name: "wrong etag, whole object", size: 10, etag: `"00000000000000000000000000000000"`, failed: true},
		{name: "unreadable destination", size: 3*part + 1, sink: func() *transfertest.Sink { s := transfertest.NewSink(); s.Unreadable = true; return s }, want: transfer.UnverifiedUnreadable},
		{name: "encrypted", size: 3*part + 1, enc: true, want: transfer.UnverifiedEncrypted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := transfertest.NewSource()
			o := src.Add("k", transfertest.Data("k", int(tt.size)))
			o.Checksums, o.ChecksumAlgorithm = nil, ""
			if tt.etag != "" {
				o.ETag = tt.etag
			}
			src.Put(o, src.Data("k"))
			src.Encrypted = tt.enc
			sink := transfertest.NewSink()
			if tt.sink != nil {
				sink = tt.sink()
			}
			sum, rec := run(t, src, sink, transfer.Options{Verify: transfer.VerifyFull})
			r := result(t, rec, "k")
			if tt.failed {
				if !errors.Is(r.Err, transfer.ErrChecksum) || sum.Failed != 1 || len(sink.Committed()) != 0 {
					t.Fatalf("error %v, %d committed; want ErrChecksum and nothing committed", r.Err, len(sink.Committed()))
				}
				return
			}
			if r.Err != nil || !strings.Contains(r.Verification.String(), tt.want) {
				t.Fatalf("verification %q, error %v; want %q", r.Verification, r.Err, tt.want)
			}
		})
	}
}

// TestStreamsSumTheirMD5InOrder: a stream cannot be read back, so its
// MD5 is summed as the bytes pass on: under VerifyFull, and under
// VerifyAuto where no CRC is there to check; never for an encrypted
// object (its ETag is not its MD5). A mismatch is not fetched again (the
// bytes are out) and says how many bytes went out wrong.
func TestStreamsSumTheirMD5InOrder(t *testing.T) {
	bad := `"00000000000000000000000000000000"`
	tests := []struct {
		name   string
		verify transfer.Verify
		size   int64
		etag   string
		crc    bool // the object also has its CRC64NVME
		enc    bool
		want   string // in Verification.String(), or "" for a mismatch
	}{
		{name: "full, ranged", verify: transfer.VerifyFull, size: 3*part + 1, want: "md5"},
		{name: "full, whole object", verify: transfer.VerifyFull, size: 10, want: "md5"},
		{name: "auto, no crc", verify: transfer.VerifyAuto, size: 3*part + 1, want: "md5"},
		{name: "auto, a crc", verify: transfer.VerifyAuto, size: 3*part + 1, crc: true, want: "crc64nvme"},
		{name: "auto, encrypted", verify: transfer.VerifyAuto, size: 3*part + 1, enc: true, want: transfer.UnverifiedEncrypted},
		{name: "full, encrypted", verify: transfer.VerifyFull, size: 3*part + 1, enc: true, etag: bad, want: transfer.UnverifiedEncrypted},
		{name: "auto, mismatch", verify: transfer.VerifyAuto, size: 3*part + 1, etag: bad},
		{name: "full, mismatch", verify: transfer.VerifyFull, size: 10, etag: bad},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := transfertest.NewSource()
			o := src.Add("k", transfertest.Data("k", int(tt.size)))
			if !tt.crc {
				o.Checksums, o.ChecksumAlgorithm = nil, ""
			}
			if tt.etag != "" {
				o.ETag = tt.etag
			}
			src.Put(o, src.Data("k"))
			src.Encrypted = tt.enc
			sink := transfertest.NewSink()
			sink.Stream = true
			sum, rec := run(t, src, sink, transfer.Options{Verify: tt.verify})
			r := result(t, rec, "k")
			if tt.want == "" {
				want := fmt.Sprintf("the %d bytes written to the stream are wrong", tt.size)
				if !errors.Is(r.Err, transfer.ErrChecksum) || !strings.Contains(r.Err.Error(), want) || sum.Retries != 0 || sink.Creates() != 1 {
					t.Fatalf("error %v, %d retries, %d creates; want ErrChecksum saying %q, fetched once", r.Err, sum.Retries, sink.Creates(), want)
				}
				return
			}
			if r.Err != nil || !strings.Contains(r.Verification.String(), tt.want) {
				t.Fatalf("verification %q, error %v; want %q", r.Verification, r.Err, tt.want)
			}
		})
	}
}

func TestMD5ETagOnlyIsNotCheckedUnlessFull(t *testing.T) {
	src := transfertest.NewSource()
	o := src.Add("k", transfertest.Data("k", 10))
	o.Checksums, o.ChecksumAlgorithm = nil, ""
	src.Put(o, src.Data("k"))
	_, rec := run(t, src, transfertest.NewSink(), transfer.Options{})
	if v := result(t, rec, "k").Verification; v.Unverified != transfer.UnverifiedMD5Only || v.Status() != "unverified" {
		t.Fatalf("verification %+v, want unverified %s", v, transfer.UnverifiedMD5Only)
	}
}

func TestChecksummerGivesRangedObjectsTheirChecksum(t *testing.T) {
	data := transfertest.Data("k", 3*part+1)
	tests := []struct {
		name     string
		lookup   func(string) (map[string]string, error)
		want     string // Verification.Unverified, "" when verified
		mismatch bool
	}{
		{name: "found", lookup: nil},
		{name: "wrong", lookup: func(string) (map[string]string, error) {
			return map[string]string{"CRC64NVME": transfertest.CRC64NVME([]byte("other"))}, nil
		}, mismatch: true},
		{name: "lookup fails", lookup: func(string) (map[string]string, error) { return nil, errors.New("head: 500") }, want: transfer.UnverifiedLookupFailed},
		{name: "none", lookup: func(string) (map[string]string, error) { return nil, nil }, want: transfer.UnverifiedNoChecksum},
		{name: "composite", lookup: func(string) (map[string]string, error) {
			return map[string]string{"CRC64NVME": transfertest.CRC64NVME(data) + "-3"}, nil
		}, want: transfer.UnverifiedComposite},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := &transfertest.ChecksumSource{Source: transfertest.NewSource(), Lookup: tt.lookup}
			o := src.Add("k", data)
			o.Checksums = nil // listed with the algorithm only, as S3 lists
			src.Put(o, data)
			if tt.lookup == nil {
				src.Lookup = func(string) (map[string]string, error) {
					return map[string]string{"CRC64NVME": transfertest.CRC64NVME(data)}, nil
				}
			}
			sink := transfertest.NewSink()
			_, rec := run(t, src, sink, transfer.Options{})
			r := result(t, rec, "k")
			want := int64(1)
			if tt.mismatch {
				want = 2 // a mismatch is fetched once more before it fails
			}
			if src.Lookups() != want {
				t.Errorf("%d lookups, want %d", src.Lookups(), want)
			}
			switch {
			case tt.mismatch:
				if !errors.Is(r.Err, transfer.ErrChecksum) || len(sink.Committed()) != 0 {
					t.Fatalf("error %v, want ErrChecksum and nothing committed", r.Err)
				}
			case r.Err != nil:
				t.Fatalf("error %v", r.Err)
			case tt.want == "" && !slices.Equal(r.Verification.Checksums, []string{"crc64nvme"}):
				t.Fatalf("verification %v, want crc64nvme", r.Verification)
			case r.Verification.Unverified != tt.want:
				t.Fatalf("verification %+v, want unverified %q", r.Verification, tt.want)
			}
		})
	}
}

func TestWholeObjectResponseChecksums(t *testing.T) {
	src := transfertest.NewSource()
	for _, k := range []string{"k", "bad"} {
		o := src.Add(k, transfertest.Data(k, 10))
		o.Checksums, o.ChecksumAlgorithm = nil, "" // the response carries them
		src.Put(o, src.Data(k))
	}
	src.WholeChecksums = func(key string) map[string]string {
		if key == "bad" {
			return map[string]string{"CRC32C": "AAAAAA=="}
		}
		return map[string]string{"CRC64NVME": transfertest.CRC64NVME(src.Data(key))}
	}
	_, rec := run(t, src, transfertest.NewSink(), transfer.Options{})
	if v := result(t, rec, "k").Verification; !slices.Equal(v.Checksums, []string{"crc64nvme"}) || v.String() != "crc64nvme" {
		t.Errorf("k: verification %v, want crc64nvme from the response", v)
	}
	if r := result(t, rec, "bad"); !errors.Is(r.Err, transfer.ErrChecksum) {
		t.Errorf("bad: error %v, want ErrChecksum", r.Err)
	}
}

func TestVerifyOffAndEmptyObjects(t *testing.T) {
	src := transfertest.NewSource()
	src.Add("k", transfertest.Data("k", 10))
	src.Add("empty", nil)
	_, rec := run(t, src, transfertest.NewSink(), transfer.Options{Verify: transfer.VerifyOff})
	if v := result(t, rec, "k").Verification; !v.Off || v.Status() != "off" || v.String() != "off" {
		t.Errorf("k: verification %+v, want off", v)
	}
	_, rec = run(t, src, transfertest.NewSink(), transfer.Options{})
	if v := result(t, rec, "empty").Verification; v.Unverified != transfer.UnverifiedEmpty || !strings.Contains(v.String(), "unverified empty") {
		t.Errorf("empty: verification %+v, want unverified empty", v)
	}
}

// skipErr is an adapter's error whose behaviour is a skip.
type skipErr struct{}

func (skipErr) Error() string      { return "archived" }
func (skipErr) SkipReason() string { return "archived: restore it first" }
func (skipErr) Retriable() bool    { return false }

func TestAnErrorWithASkipReasonSkips(t *testing.T) {
	src := transfertest.NewSource()
	src.Add("cold", transfertest.Data("cold", 10))
	src.Add("warm", transfertest.Data("warm", 10))
	src.Fault = func(key string, _, _ int64, _ int) error {
		if key == "cold" {
			return fmt.Errorf("get cold: %w", skipErr{})
		}
		return nil
	}
	sum, rec := run(t, src, transfertest.NewSink(), transfer.Options{})
	if r := result(t, rec, "cold"); r.Err != nil || r.Skipped != "archived: restore it first" || sum.Skipped != 1 || sum.Objects != 1 {
		t.Fatalf("cold: skipped %q, error %v; summary %+v", r.Skipped, r.Err, sum)
	}
}

func TestAnObjectOfUnknownSizeFailsWithoutARequest(t *testing.T) {
	src := transfertest.NewSource()
	src.Add("k", transfertest.Data("k", 3*part+7))
	url := plainLister{&transfertest.Lister{Objects: []transfer.Object{{Key: "k", Name: "k", Size: -1}}}}
	sink := transfertest.NewSink()
	sum, rec := run(t, src, sink, transfer.Options{Lister: url})
	if r := result(t, rec, "k"); r.Err == nil || transfer.Retriable(r.Err) || sum.Failed != 1 || len(src.Opens()) != 0 || sink.Creates() != 0 {
		t.Fatalf("error %v, %d requests, %d files; want a permanent failure before any request or file", r.Err, len(src.Opens()), sink.Creates())
	}
}

func TestAListedSizeAboveTheLargestObjectFailsFirst(t *testing.T) {
	src := transfertest.NewSource()
	o := src.Add("k", transfertest.Data("k", 10))
	o.Size = transfer.MaxObjectSize + 1
	src.Put(o, src.Data("k"))
	sink := transfertest.NewSink()
	_, rec := run(t, src, sink, transfer.Options{})
	if r := result(t, rec, "k"); r.Err == nil || len(src.Opens()) != 0 || sink.Creates() != 0 {
		t.Fatalf("error %v, %d requests, %d files created; want a failure before any request or file", r.Err, len(src.Opens()), sink.Creates())
	}
}

func TestObjectErrorFailsWithoutARequest(t *testing.T) {
	src := transfertest.NewSource()
	o := src.Add("k", transfertest.Data("k", 10))
	o.Err = errors.New("unparsable listing entry")
	src.Put(o, src.Data("k"))
	sum, rec := run(t, src, transfertest.NewSink(), transfer.Options{})
	if r := result(t, rec, "k"); r.Err != o.Err || sum.Failed != 1 || len(src.Opens()) != 0 {
		t.Fatalf("error %v after %d requests, want the object's own error and none", r.Err, len(src.Opens()))
	}
}

func TestFilterAndListObserver(t *testing.T) {
	src := transfertest.NewSource()
	for _, k := range []string{"a.txt", "b.bin", "c/d.txt"} {
		src.Add(k, transfertest.Data(k, 5))
	}
	rules := transfer.Rules{{Include: false, Pattern: "*"}, {Include: true, Pattern: "*.txt"}}
	sum, rec := run(t, src, transfertest.NewSink(), transfer.Options{Filter: rules.Filter()})
	listed, done := rec.Listing()
	if sum.Objects != 2 || !slices.Equal(listed, []string{"a.txt", "c/d.txt"}) || !done {
		t.Fatalf("%d objects, listed %q (complete %v); want the two .txt", sum.Objects, listed, done)
	}
	if transfer.Rules(nil).Filter() != nil {
		t.Errorf("no rules: want no filter")
	}
}

func TestObserversFanOut(t *testing.T) {
	src := transfertest.NewSource()
	src.Add("k", transfertest.Data("k", 3*part))
	src.Fault = func(_ string, off, _ int64, attempt int) error {
		if off == 0 && attempt == 1 {
			return transfer.Permanent(errors.New("once")) // not retried: the object fails
		}
		return nil
	}
	a, b := transfertest.NewRecorder(), transfertest.NewRecorder()
	e, err := transfer.New([]transfer.Lane{{Source: src}}, transfertest.NewSink(),
		transfer.Options{PartSize: part, Observer: transfer.Observers{a, transfer.NopObserver{}, b}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	src.Fault = func(_ string, off, _ int64, attempt int) error {
		if attempt == 2 {
			return &transfer.ShortBodyError{Got: 1, Want: 2} // retried
		}
		return nil
	}
	e, _ = transfer.New([]transfer.Lane{{Source: src}}, transfertest.NewSink(),
		transfer.Options{PartSize: part, Backoff: fast, Observer: transfer.Observers{a, b}})
	if _, err := e.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, r := range []*transfertest.Recorder{a, b} {
		res := result(t, r, "k")
		if r.Started("k") != 2 || r.PartsDone("k") < 3 || len(r.Retries()) == 0 || r.BytesSeen() < 3*part || res.Err != nil {
			t.Errorf("observer saw %d starts, %d parts, %d retries, %d bytes, last error %v",
				r.Started("k"), r.PartsDone("k"), len(r.Retries()), r.BytesSeen(), res.Err)
		}
	}
}

func TestSummaryCountsLanesAndLatency(t *testing.T) {
	src := transfertest.NewSource()
	for i := range 8 {
		src.Add(fmt.Sprint("k", i), transfertest.Data(fmt.Sprint(i), 4*part))
	}
	lanes := []transfer.Lane{{Name: "a", Source: src}, {Name: "b", Source: src}}
	e, err := transfer.New(lanes, transfertest.NewSink(), transfer.Options{PartSize: part, Workers: 4, Threads: 4})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var laneBytes int64
	for _, l := range sum.Lanes {
		laneBytes += l.Bytes
	}
	if sum.Objects != 8 || sum.Requests != 32 || laneBytes != 32*part || len(sum.Lanes) != 2 {
		t.Fatalf("summary %+v, want 8 objects in 32 requests over 2 lanes", sum)
	}
	if sum.TTFB.Total() != 32 || sum.Request.Total() != 32 || sum.TTFB99 < sum.TTFB50 {
		t.Errorf("histograms of %d and %d requests, p50 %s p99 %s; want 32 each, p99 >= p50", sum.TTFB.Total(), sum.Request.Total(), sum.TTFB50, sum.TTFB99)
	}
}
