package e2e

import (
	"bufio"
	"bytes"

	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/s3pd/s3pd/pkg/s3emu"
)

// startGet starts s3pd without waiting for it.
func startGet(t *testing.T, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = baseEnv(t)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd, &stderr
}

// journaled sums the bytes that the journals under dir record as durable.
func journaled(t *testing.T, dir string) int64 {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(dir, ".s3pd", "*.journal"))
	var n int64
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Scan()       // header
		for sc.Scan() { // OFFSET LENGTH [SUM]
			fields := strings.Fields(sc.Text())
			if len(fields) < 2 {
				continue
			}
			if v, err := strconv.ParseInt(fields[1], 10, 64); err == nil {
				n += v
			}
		}
		f.Close()
	}
	return n
}

// waitForJournal waits until some part is journaled under dir.
func waitForJournal(t *testing.T, dir string) { waitForJournaled(t, dir, 1) }

// waitForJournaled waits until the journals under dir record at least
// min bytes: a condition, not a guess at how long that takes.
func waitForJournaled(t *testing.T, dir string, min int64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for journaled(t, dir) < min {
		if time.Now().After(deadline) {
			t.Fatalf("fewer than %d bytes journaled within 30s", min)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// resetAfterDrain zeroes the emulator's counters once the requests of
// a stopped client have ended: a handler still writing into a killed
// client's socket would otherwise count toward the rerun.
func resetAfterDrain(t *testing.T, emu *s3emu.Server) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for emu.Stats().InFlight > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d requests still in flight 10s after the client stopped", emu.Stats().InFlight)
		}
		time.Sleep(10 * time.Millisecond)
	}
	emu.ResetStats()
}

func finalName(dir string) string { return filepath.Join(dir, "00000000") }

func checkSynthetic(t *testing.T, path, key string, size int) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]byte, size)
	s3emu.SyntheticBytes(key, 0, want)
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: content differs from the object", path)
	}
}

func TestKillThenResumeFetchesOnlyWhatIsMissing(t *testing.T) {
	const size = 48 << 20
	s := emuStore(t, s3emu.Options{Dataset: "big:1:48MiB", ConnRate: 3 << 20})
	dest := t.TempDir()
	args := s.cmd("get", "--partsize", "1MiB", "--threads", "4", s.url("big/"), dest)
	cmd, _ := startGet(t, args...)
	waitForJournaled(t, dest, 4<<20) // several parts in, most still to come
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if _, err := os.Stat(finalName(dest)); !os.IsNotExist(err) {
		t.Fatalf("a killed run left a file at the final name: %v", err)
	}
	done := journaled(t, dest)
	if done <= 0 || done >= size {
		t.Fatalf("journal records %d bytes, want part of %d", done, size)
	}
	resetAfterDrain(t, s.emu)
	r := run(t, nil, s.cmd("get", "--partsize", "1MiB", "--threads", "4", s.url("big/"), dest)...)
	if r.code != 0 {
		t.Fatalf("rerun: exit %d\n%s", r.code, r.stderr)
	}
	// At most one part more than the journal lacked: a part whose
	// journal record does not read back is fetched again whole.
	sent := s.emu.BytesSentFor(s.bucket, "big/00000000")
	if sent < size-done || sent > size-done+1<<20 {
		t.Fatalf("rerun fetched %d bytes, want the %d the journal lacked (at most one part more)", sent, size-done)
	}
	checkSynthetic(t, finalName(dest), "big/00000000", size)
	tree(t, dest) // no temporary files left
}

func TestInterruptStopsQuicklyAndResumes(t *testing.T) {
	const size = 48 << 20
	s := emuStore(t, s3emu.Options{Dataset: "big:1:48MiB", ConnRate: 3 << 20})
	dest := t.TempDir()
	args := s.cmd("get", "--partsize", "1MiB", "--threads", "4", s.url("big/"), dest)
	cmd, stderr := startGet(t, args...)
	waitForJournal(t, dest)
	start := time.Now()
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	took := time.Since(start)
	if took > 2*time.Second {
		t.Errorf("SIGINT took %s to stop, want under 2s", took)
	}
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
		t.Fatalf("exit %v, want 130\n%s", err, stderr)
	}
	if _, err := os.Stat(finalName(dest)); !os.IsNotExist(err) {
		t.Fatalf("an interrupted run left a file at the final name: %v", err)
	}
	done := journaled(t, dest)
	if done <= 0 {
		t.Fatal("an interrupted run kept nothing to resume from")
	}
	resetAfterDrain(t, s.emu)
	r := run(t, nil, s.cmd("get", "--partsize", "1MiB", s.url("big/"), dest)...)
	if r.code != 0 {
		t.Fatalf("rerun: exit %d\n%s", r.code, r.stderr)
	}
	if sent := s.emu.BytesSentFor(s.bucket, "big/00000000"); sent > size-done+1<<20 {
		t.Errorf("rerun fetched %d bytes, want at most %d", sent, size-done)
	}
	checkSynthetic(t, finalName(dest), "big/00000000", size)
	tree(t, dest)

	// A third run skips the complete, unchanged file.
	s.emu.ResetStats()
	r = run(t, nil, s.cmd("get", "--json", s.url("big/"), dest)...)
	if r.code != 0 || !strings.Contains(r.stdout, `"status":"skipped"`) {
		t.Fatalf("third run: exit %d, want the file skipped\n%s", r.code, r.stdout)
	}
	if st := s.emu.Stats(); st.GetRequests != 0 {
		t.Errorf("skipping an unchanged file sent %d GETs, want 0", st.GetRequests)
	}
}
