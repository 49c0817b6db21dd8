package transfer

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"testing"
)

// TestDigestIsCheckedBeforeCommit: an object named with a Digest is
// verified by it, fetched in ranges or whole; a wrong one fails the
// object with ErrChecksum and it is never committed.
func TestDigestIsCheckedBeforeCommit(t *testing.T) {
	for _, tt := range []struct {
		name    string
		size    int64
		wrong   bool
		offered bool   // the source offered the digest
		verify  Verify // of the run
		want    string // the verification, when it is not wrong
	}{
		{"ranged", 10_500, false, false, VerifyAuto, "sha256"},
		{"whole", 500, false, false, VerifyAuto, "sha256"},
		{"ranged wrong", 10_500, true, false, VerifyAuto, ""},
		{"whole wrong", 500, true, false, VerifyAuto, ""},
		{"offered, auto", 10_500, true, true, VerifyAuto, "unverified digest-only: the object's only checksum is the sha256 its source sent: --verify full checks it"},
		{"offered, full", 10_500, false, true, VerifyFull, "sha256"},
		{"offered wrong, full", 10_500, true, true, VerifyFull, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := newMemSource(map[string]int64{"k": tt.size})
			sum := sha256.Sum256(src.data["k"])
			if tt.wrong {
				sum[3] ^= 0x40
			}
			src.objs[0].Digest = &Digest{Name: "sha256", New: sha256.New, Sum: sum[:], Offered: tt.offered}
			sink := readSink{newMemSink()}
			obs := &results{}
			runEngine(t, src, sink, Options{PartSize: 1000, Observer: obs, Verify: tt.verify})
			if len(obs.got) != 1 {
				t.Fatalf("%d results, want 1", len(obs.got))
			}
			r := obs.got[0]
			_, committed := sink.committed["k"]
			if tt.want == "" {
				if !errors.Is(r.Err, ErrChecksum) || committed {
					t.Fatalf("error %v, committed %v: want ErrChecksum and nothing committed", r.Err, committed)
				}
				return
			}
			if r.Err != nil || !committed || r.Verification.String() != tt.want {
				t.Fatalf("error %v, committed %v, verification %q: want committed, %q", r.Err, committed, r.Verification, tt.want)
			}
		})
	}
}

// TestNoRangesIsOneRequest: an object whose source serves it only whole
// is fetched in one request, however many parts its size makes.
func TestNoRangesIsOneRequest(t *testing.T) {
	src := newMemSource(map[string]int64{"k": 10_500})
	src.objs[0].NoRanges = true
	sink := newMemSink()
	sum := runEngine(t, src, sink, Options{PartSize: 1000})
	if sum.Objects != 1 || src.opens.Load() != 1 {
		t.Fatalf("%d objects in %d requests, want 1 in 1", sum.Objects, src.opens.Load())
	}
	if !bytes.Equal(sink.committed["k"], src.data["k"]) {
		t.Fatal("the bytes committed are not the object's")
	}
}
