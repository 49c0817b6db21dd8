package transfer_test

import (
	"context"
	"testing"

	"github.com/s3pd/s3pd/pkg/transfer"
	"github.com/s3pd/s3pd/pkg/transfer/transfertest"
)

// A Stager's files get every byte through stages, whatever the sizes of
// the objects, parts and stages, and the objects verify.
func TestStagerTakesEveryByte(t *testing.T) {
	for _, stage := range []int{1, 333, 1000, 4096} {
		src := transfertest.NewSource()
		keys := []string{"empty", "small", "one-part", "parts", "odd"}
		for i, n := range []int{0, 10, part, 4 * part, 4*part + 17} {
			src.Add(keys[i], transfertest.Data(keys[i], n))
		}
		sink := transfertest.NewSink()
		sink.Stage = stage
		sum, rec := run(t, src, sink, transfer.Options{Threshold: 2 * part, Verify: transfer.VerifyFull})
		if sum.Objects != int64(len(keys)) || sum.Failed != 0 {
			t.Fatalf("stage %d: %d objects, %d failed, want %d and 0", stage, sum.Objects, sum.Failed, len(keys))
		}
		for _, k := range keys[1:] {
			if r := result(t, rec, k); !r.Verification.Verified() {
				t.Errorf("stage %d: %s not verified: %+v", stage, k, r.Verification)
			}
		}
		wantCommitted(t, sink, src, keys...)
		if sink.Stages() == 0 {
			t.Errorf("stage %d: no stage was asked for", stage)
		}
	}
}

// A retried range goes on where its stage stopped: the bytes it staged
// before the body broke are written, and only the rest is asked again.
func TestStagerResumesABrokenBodyWhereItStopped(t *testing.T) {
	src := transfertest.NewSource()
	src.Add("k", transfertest.Data("k", 4*part))
	src.Break = func(key string, off int64, attempt int) int64 {
		if off == part && attempt == 1 {
			return 401
		}
		return -1
	}
	sink := transfertest.NewSink()
	sink.Stage = 256
	_, rec := run(t, src, sink, transfer.Options{Threads: 1})
	if r := result(t, rec, "k"); r.Err != nil || !r.Verification.Verified() {
		t.Fatalf("result %+v, want the object verified", r)
	}
	found := false
	for _, o := range src.Opens() {
		found = found || o.Off == part+401 && o.N == part-401
	}
	if !found {
		t.Errorf("opens %+v, want a retry of bytes %d+%d", src.Opens(), part+401, part-401)
	}
	wantCommitted(t, sink, src, "k")
}

// An interrupted part's prefix reaches the file through its stage before
// it is journaled, so the next run resumes after it.
func TestStagerJournalsTheStagedPrefix(t *testing.T) {
	src := transfertest.NewSource()
	src.Add("k", transfertest.Data("k", 4*part))
	sink := transfertest.NewSink()
	sink.Journal, sink.Stage = true, 128
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
	_, rec := run(t, src, sink, transfer.Options{Threads: 1})
	if r := result(t, rec, "k"); r.Err != nil || r.Resumed != 2*part+400 || !r.Verification.Verified() {
		t.Fatalf("result %+v, want %d bytes resumed and the object verified", r, 2*part+400)
	}
	wantCommitted(t, sink, src, "k")
}
