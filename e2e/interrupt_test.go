package e2e

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/s3pd/s3pd/pkg/s3emu"
)

// Ctrl-C prints one line, not an error per object in flight, and says how
// many objects are kept for resume; the rerun says what it resumed.
func TestInterruptIsOneLineAndRerunSaysWhatItResumed(t *testing.T) {
	s := emuStore(t, s3emu.Options{Dataset: "big:3:16MiB", ConnRate: 1 << 20})
	dest := t.TempDir()
	cmd := exec.Command(bin, s.cmd("get", "--partsize", "1MiB", "--threads", "4", s.url("big/"), dest)...)
	cmd.Env = baseEnv(t)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	waitForJournal(t, dest)
	cmd.Process.Signal(syscall.SIGINT)
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Fatalf("exit %d, want 130\n%s", code, stderr.String())
	}
	if strings.Contains(stderr.String(), "failed") || strings.Count(stderr.String(), "\n") != 1 ||
		!strings.Contains(stderr.String(), "s3pd: interrupted") {
		t.Errorf("stderr after Ctrl-C: %q, want the one line s3pd: interrupted", stderr.String())
	}
	if !strings.Contains(stdout.String(), "objects kept for resume: run the same command again to resume them") {
		t.Errorf("summary after Ctrl-C does not say what is kept:\n%s", stdout.String())
	}

	r := run(t, nil, s.cmd("get", "--json", "--partsize", "1MiB", "--threads", "4", s.url("big/"), dest)...)
	if r.code != 0 {
		t.Fatalf("rerun: exit %d\n%s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	var sum struct {
		Type           string `json:"type"`
		ResumedObjects int64  `json:"resumed_objects"`
		ResumedBytes   int64  `json:"resumed_bytes"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil || sum.Type != "summary" || sum.ResumedObjects < 1 || sum.ResumedBytes < 1<<20 {
		t.Errorf("rerun summary %+v (%v), want at least one object resumed with its kept bytes", sum, err)
	}
	for i := range 3 {
		key := "big/0000000" + string(rune('0'+i))
		checkSynthetic(t, filepath.Join(dest, "0000000"+string(rune('0'+i))), key, 16<<20)
	}
}

// TestSIGTERMExits143: SIGTERM stops a run as Ctrl-C does, keeping its
// parts for resume, but exits 143 (128+15), what Kubernetes and Slurm
// logs show for it; SIGINT stays 130.
func TestSIGTERMExits143(t *testing.T) {
	s := emuStore(t, s3emu.Options{Dataset: "big:2:16MiB", ConnRate: 1 << 20})
	for _, tt := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGTERM, 143}, {syscall.SIGINT, 130}} {
		t.Run(tt.sig.String(), func(t *testing.T) {
			dest := t.TempDir()
			cmd := exec.Command(bin, s.cmd("get", "--json", "--partsize", "1MiB", "--threads", "4", s.url("big/"), dest)...)
			cmd.Env = baseEnv(t)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
			waitForJournal(t, dest)
			cmd.Process.Signal(tt.sig)
			cmd.Wait()
			if code := cmd.ProcessState.ExitCode(); code != tt.code {
				t.Fatalf("exit %d after %v, want %d\n%s", code, tt.sig, tt.code, stderr.String())
			}
			if !strings.Contains(stderr.String(), "s3pd: interrupted") || strings.Count(stderr.String(), "\n") != 1 {
				t.Errorf("stderr after %v: %q, want the one line s3pd: interrupted", tt.sig, stderr.String())
			}
			if !strings.Contains(stdout.String(), `"exit_code":`+strconv.Itoa(tt.code)) {
				t.Errorf("--json after %v has no error line with exit_code %d:\n%s", tt.sig, tt.code, stdout.String())
			}
		})
	}
}
