package e2e

import (
	"bytes"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/s3pd/s3pd/pkg/s3emu"
)

// TestDirectoryBucketStdinAcrossSessions: `copy -` into a directory
// bucket whose sessions expire during the stream lands byte for byte,
// each part signed with a live session; when new sessions are refused
// mid-stream, the upload fails with the reason, no object is completed,
// and the upload it can no longer abort is named.
func TestDirectoryBucketStdinAcrossSessions(t *testing.T) {
	const part = 5 << 20
	stream := randomBytes(41, 3*part+7)
	// feed writes the stream a part at a time, pausing past a session's
	// lifetime between parts: the input's pace, so that the parts span
	// sessions (no state is waited for).
	feed := func(run *started, lifetime time.Duration) {
		for off := 0; off < len(stream); off += part {
			run.in.Write(stream[off:min(off+part, len(stream))])
			time.Sleep(lifetime + lifetime/4)
		}
		run.in.Close()
	}
	t.Run("renewed", func(t *testing.T) {
		s := dirStore(t, s3emu.Options{SessionLifetime: time.Second})
		run := start(t, nil, true, s.cmd("copy", "--partsize", "5MiB", "-", s.url("in/s"))...)
		feed(run, time.Second)
		if code := run.stop(syscall.Signal(0)); code != 0 {
			t.Fatalf("exit %d\n%s", code, run.stderr.String())
		}
		if got := s.get(t, "in/s"); !bytes.Equal(got, stream) {
			t.Errorf("the object holds %d bytes that differ from the %d of the stream", len(got), len(stream))
		}
		if n := s.emu.SessionsCreated(); n < 3 {
			t.Errorf("%d sessions made, want at least 3 (one per lifetime the stream spanned)", n)
		}
		if strings.Contains(run.stderr.String(), "ExpiredToken") {
			t.Errorf("a request went out with an expired session:\n%s", run.stderr.String())
		}
	})
	t.Run("refused", func(t *testing.T) {
		faults := s3emu.NewFaults(s3emu.Rule{Key: "*", Method: "SESSION", Attempt: 2, Times: -1, Action: s3emu.Status{Code: 403, S3Code: "AccessDenied"}})
		s := dirStore(t, s3emu.Options{SessionLifetime: time.Second, Faults: faults, LogRequests: true})
		run := start(t, nil, true, s.cmd("copy", "--partsize", "5MiB", "-", s.url("in/r"))...)
		feed(run, time.Second)
		code := run.stop(syscall.Signal(0))
		stderr := run.stderr.String()
		if code != 1 || !strings.Contains(stderr, "s3express:CreateSession") ||
			!strings.Contains(stderr, "upload 1 of "+s.url("in/r")+" is left incomplete, which the next copy to the key aborts") {
			t.Errorf("exit %d, want 1 naming the refused session and the upload it could not abort\n%s", code, stderr)
		}
		// The test cannot list with sessions refused: the server's log
		// shows that no upload was completed.
		for _, r := range s.emu.Log() {
			if r.Method == "POST" && strings.Contains(r.Query, "uploadId=") && r.Status == 200 {
				t.Errorf("an upload was completed: %+v", r)
			}
		}
	})
}
