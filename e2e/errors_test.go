package e2e

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/s3pd/s3pd/pkg/s3emu"
)

// Errors say what to do, come fast, and exit with the code the summary
// and the README give.
func TestErrorsAndExitCodes(t *testing.T) {
	s := emuStore(t, s3emu.Options{Dataset: "d:2:1MB", Faults: s3emu.NewFaults(
		s3emu.Rule{Key: "d/00000001", Action: s3emu.Status{Code: 500}})})

	t.Run("missing key is one failed object", func(t *testing.T) {
		r := run(t, nil, s.cmd("get", s.url("d/nothere"), t.TempDir())...)
		if r.code != 1 || !strings.Contains(r.stdout+r.stderr, "1 failed") || !strings.Contains(r.stderr, "NoSuchKey") {
			t.Errorf("exit %d, want 1 and a summary with 1 failed:\n%s%s", r.code, r.stdout, r.stderr)
		}
	})
	t.Run("connection refused fails fast", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close() // nothing listens there now
		start := time.Now()
		r := run(t, nil, "get", "--quiet", "--no-sign-request", "--endpoint-url", "http://"+addr, s.url("d/"), t.TempDir())
		if took := time.Since(start); r.code != 1 || !strings.Contains(r.stderr, "connection refused") || took > 5*time.Second {
			t.Errorf("exit %d after %v, want 1 within 5s saying connection refused:\n%s", r.code, took, r.stderr)
		}
	})
	t.Run("no credentials", func(t *testing.T) {
		args := []string{"get", "--quiet", "--endpoint-url", s.endpoint, "--region", "us-east-1", s.url("d/"), t.TempDir()}
		r := run(t, []string{"AWS_ACCESS_KEY_ID=", "AWS_SECRET_ACCESS_KEY="}, args...)
		want := "s3pd: no AWS credentials found: run `aws configure`, set AWS_PROFILE, or use --no-sign-request\n"
		if r.code != 2 || r.stderr != want {
			t.Errorf("exit %d, stderr %q; want 2 and %q", r.code, r.stderr, want)
		}
	})
	t.Run("retries are logged as they happen", func(t *testing.T) {
		r := run(t, nil, s.cmd("get", "--log-level", "info", s.url("d/"), t.TempDir())...)
		if r.code != 0 || !strings.Contains(r.stderr, "retrying") || !strings.Contains(r.stderr, "500") {
			t.Errorf("exit %d, want 0 and an info line with the retry's reason:\n%s", r.code, r.stderr)
		}
	})
	t.Run("MB in a dataset is MiB", func(t *testing.T) {
		dest := t.TempDir()
		if r := run(t, nil, s.cmd("get", s.url("d/00000000"), dest)...); r.code != 0 {
			t.Fatalf("exit %d\n%s", r.code, r.stderr)
		}
		if st, err := os.Stat(filepath.Join(dest, "00000000")); err != nil || st.Size() != 1<<20 {
			t.Errorf("d:2:1MB gave an object of %v bytes (%v), want 1 MiB", st, err)
		}
	})
}
