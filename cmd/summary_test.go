package cmd

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

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
// objects were verified and a recap of the failures.
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
	r.printSummary(&b, transfer.Summary{Objects: 2, Failed: 1, Bytes: 2<<20 + 100, Elapsed: 2 * time.Second, Requests: 5, Retries: 3,
		Window: 48, WindowStop: transfer.WindowKnee, WindowKnee: 48}, outputFlags{}, false, nil, runMeasures{})
	out := b.String()
	for _, want := range []string{
		"objects: 2 transferred, 0 skipped, 1 failed (1.00 objects/s)",
		"bytes: 2.00 MiB in 2.00 s, 1.00 MiB/s (0.01 Gbit/s)",
		"verified: 1 objects (2.00 MiB) by crc64nvme 1",
		"1 md5-only: --verify full checks their MD5 ETags",
		"requests: 5, retries: 3",
		"window 48 (knee)",
		"failed: 1 objects\n  c: 404 NoSuchKey",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "0.000") {
		t.Errorf("summary has a zero with three decimals:\n%s", out)
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
// rate and the time left.
func TestProgressBarShowsDoneOfTotal(t *testing.T) {
	var errOut syncBuffer
	f := &Factory{IO: &IOStreams{Out: &strings.Builder{}, ErrOut: &errOut, ErrTTY: true}}
	listed := &listedBytes{}
	for range 4 {
		listed.Listed(transfer.Object{Size: 8 << 20})
	}
	listed.ListingDone()
	r := newReporter(f, zap.NewNop(), outputFlags{}, listed)
	r.Bytes(12 << 20)
	r.ObjectDone(transfer.Result{Object: transfer.Object{Key: "a", Size: 8 << 20}, Bytes: 8 << 20})
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(errOut.String(), "1/4 objects") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	r.close()
	out := errOut.String()
	for _, want := range []string{"1/4 objects", "12/32 MiB", "MiB/s", "37%"} {
		if !strings.Contains(out, want) {
			t.Errorf("progress bar lacks %q: %q", want, out)
		}
	}
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
		r.printSummary(&b, transfer.Summary{Objects: 1, Bytes: 1, Elapsed: time.Second}, outputFlags{}, false, nil, runMeasures{})
		got := ""
		for _, l := range strings.SplitAfter(b.String(), "\n") {
			if strings.HasPrefix(l, "direct I/O") {
				got += l
			}
		}
		if got != tt.want {
			t.Errorf("%+v: summary says %q, want %q", tt.st, got, tt.want)
		}
		if line := r.summary(transfer.Summary{}, outputFlags{}); line.DirectIO != tt.st.State || line.DirectIOReason != tt.st.Reason {
			t.Errorf("%+v: --json says %q, %q", tt.st, line.DirectIO, line.DirectIOReason)
		}
	}
}
