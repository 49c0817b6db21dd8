package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"

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

// journaled sums the bytes that the journals under dir record as durable
// (a later line for an offset replaces an earlier one: the prefix of a
// part interrupted in progress, then the whole part).
func journaled(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	for _, lengths := range journalLines(t, dir) {
		for _, v := range lengths {
			n += v
		}
	}
	return n
}

// journalLines returns, for each journal under dir, the length recorded
// for each offset.
func journalLines(t *testing.T, dir string) []map[int64]int64 {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(dir, ".s3pd", "*.journal"))
	var out []map[int64]int64
	for _, p := range paths {
		f, err := os.Open(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue // its object completed since the glob: its journal went
		}
		if err != nil {
			t.Fatal(err)
		}
		lengths := map[int64]int64{}
		sc := bufio.NewScanner(f)
		sc.Scan()       // header
		for sc.Scan() { // OFFSET LENGTH [SUM]
			fields := strings.Fields(sc.Text())
			if len(fields) < 2 {
				continue
			}
			off, err1 := strconv.ParseInt(fields[0], 10, 64)
			v, err2 := strconv.ParseInt(fields[1], 10, 64)
			if err1 == nil && err2 == nil {
				lengths[off] = v
			}
		}
		f.Close()
		out = append(out, lengths)
	}
	return out
}

// waitForJournal waits until some part is journaled under dir.
func waitForJournal(t *testing.T, dir string) { waitForJournaled(t, dir, 1) }

// waitForJournaled waits until the journals under dir record at least
// min bytes: a condition, not a guess at how long that takes.
func waitForJournaled(t *testing.T, dir string, min int64) {
	t.Helper()
	if !eventually(30*time.Second, func() bool { return journaled(t, dir) >= min }) {
		t.Fatalf("fewer than %d bytes journaled within 30s", min)
	}
}

// resetAfterDrain zeroes the emulator's counters once the requests of
// a stopped client have ended: a handler still writing into a killed
// client's socket would otherwise count toward the rerun. No request
// must be in flight for a quarter of a second, so that a request the
// client sent just before it stopped, whose handler had not yet begun,
// is drained too.
func resetAfterDrain(t *testing.T, emu *s3emu.Server) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		awaitEmu(t, emu, time.Until(deadline), "no request in flight after the client stopped", func(st s3emu.Stats) bool { return st.InFlight == 0 })
		// Quiet once no request begins for a quarter of a second.
		ctx, cancel := context.WithTimeout(context.Background(), 250*time.Millisecond)
		_, err := emu.Await(ctx, func(st s3emu.Stats) bool { return st.InFlight > 0 })
		cancel()
		if err != nil && emu.Stats().InFlight == 0 {
			break
		}
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
	if sent := s.emu.BytesSentFor(s.bucket, "big/00000000"); sent != size-done {
		t.Fatalf("rerun fetched %d bytes, want exactly the %d the journal lacked", sent, size-done)
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
	// The parts in progress kept what they had written: the rerun
	// fetches exactly what the journal lacks.
	if sent := s.emu.BytesSentFor(s.bucket, "big/00000000"); sent != size-done {
		t.Errorf("rerun fetched %d bytes, want exactly the %d the journal lacked", sent, size-done)
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

// Ctrl-C before any part is complete keeps the bytes of the parts in
// progress, with their running CRC: the rerun reads them back, checks
// them, and fetches only the rest of each part.
func TestEarlyInterruptKeepsPartsInProgress(t *testing.T) {
	const size, part = 32 << 20, 16 << 20
	// Every GET sends 3 MiB and then nothing until the client hangs
	// up: no part can complete before the Ctrl-C, however slow the
	// machine (a straggler taken over on a new connection stalls too),
	// and no timing is assumed. The reruns go to a second emulator that
	// serves the same synthetic object (same bytes, same ETag) whole.
	s := emuStore(t, s3emu.Options{Dataset: "big:1:32MiB", Faults: s3emu.NewFaults(
		s3emu.Rule{Key: "big/00000000", Times: -1, Action: s3emu.Stall{At: 3 << 20, For: 5 * time.Minute}})})
	clean := emuStore(t, s3emu.Options{Dataset: "big:1:32MiB"})
	dest := t.TempDir()
	args := s.cmd("get", "--partsize", "16MiB", "--threads", "2", s.url("big/"), dest)
	cmd := exec.Command(bin, args...)
	cmd.Env = baseEnv(t)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	// Both parts reached their stall, and the client read what they
	// sent (its read count, not the server's: the socket buffers hold
	// megabytes).
	// The client's read count is another process's: polled.
	if !eventually(60*time.Second, func() bool {
		return s.emu.BytesSentFor(s.bucket, "big/00000000") >= 6<<20 && readBytes(t, cmd.Process.Pid) >= 6<<20
	}) {
		t.Fatalf("the two parts did not reach their stalls within 60s (%d bytes sent)", s.emu.BytesSentFor(s.bucket, "big/00000000"))
	}
	cmd.Process.Signal(syscall.SIGINT)
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Fatalf("exit %d, want 130\n%s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "partial: 1 object kept for resume: run the same command again to resume them") {
		t.Errorf("summary after Ctrl-C does not say what is kept:\n%s", stdout.String())
	}
	journals := journalLines(t, dest)
	if len(journals) != 1 {
		t.Fatalf("%d journals after Ctrl-C, want 1", len(journals))
	}
	var kept int64
	for off, n := range journals[0] {
		if n <= 0 || n >= part {
			t.Errorf("journal line at %d records %d bytes, want a prefix of a %d-byte part", off, n, part)
		}
		kept += n
	}
	if kept == 0 {
		t.Fatal("Ctrl-C in the middle of the first parts kept nothing")
	}

	// A kept prefix is read back and checked like a whole part: one
	// changed byte in the second part's prefix, and that prefix is
	// fetched again; the first part's is kept.
	refetch := journals[0][part]
	if refetch > 0 {
		partials, _ := filepath.Glob(filepath.Join(dest, ".s3pd", "*.partial"))
		if len(partials) != 1 {
			t.Fatalf("partial files %v, want 1", partials)
		}
		pf, err := os.OpenFile(partials[0], os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		b := []byte{0}
		pf.ReadAt(b, part)
		pf.WriteAt([]byte{b[0] ^ 1}, part)
		pf.Close()
	}

	resetAfterDrain(t, clean.emu)
	r := run(t, nil, clean.cmd("get", "--json", "--partsize", "16MiB", "--threads", "2", clean.url("big/"), dest)...)
	if r.code != 0 {
		t.Fatalf("rerun: exit %d\n%s", r.code, r.stderr)
	}
	kept -= refetch
	if sent := clean.emu.BytesSentFor(clean.bucket, "big/00000000"); sent != size-kept {
		t.Errorf("rerun fetched %d bytes, want exactly the %d the journal lacked or that did not read back", sent, size-kept)
	}
	var obj struct {
		Status       string   `json:"status"`
		Verification string   `json:"verification"`
		Checksums    []string `json:"checksums"`
		ResumedBytes int64    `json:"resumed_bytes"`
	}
	if err := json.Unmarshal([]byte(strings.Split(r.stdout, "\n")[0]), &obj); err != nil {
		t.Fatal(err)
	}
	if obj.Status != "ok" || obj.Verification != "verified" || len(obj.Checksums) == 0 || obj.Checksums[0] != "crc64nvme" || obj.ResumedBytes != kept {
		t.Errorf("rerun's object line %+v, want ok, verified by crc64nvme, %d bytes resumed", obj, kept)
	}
	checkSynthetic(t, finalName(dest), "big/00000000", size)
	tree(t, dest)
}

// readBytes is how many bytes process pid has read (rchar in
// /proc/PID/io: files and sockets alike).
func readBytes(t *testing.T, pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		t.Fatalf("read /proc/%d/io: %v", pid, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "rchar: "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

// TestKillInTheTailThenResumeIsExact: a single object is one last wave,
// planned in pieces shorter than a part; some of its GETs stall, so the
// run is killed once the first pieces are journaled and while others
// are in flight. A rerun against a server without stalls (the same
// synthetic bytes), with another budget, which would plan other pieces,
// fits its ranges to the extents recorded: the server sends exactly the
// bytes the journal lacked, once.
func TestKillInTheTailThenResumeIsExact(t *testing.T) {
	const size = 24 << 20
	first := emuStore(t, s3emu.Options{Dataset: "tail:1:24MiB", ConnRate: 512 << 10,
		Stalls: s3emu.Stalls{Fraction: 0.2, For: time.Minute, Seed: 3}})
	s := emuStore(t, s3emu.Options{Dataset: "tail:1:24MiB", ConnRate: 1 << 20})
	dest := t.TempDir()
	cmd, _ := startGet(t, first.cmd("get", first.url("tail/"), dest)...)
	waitForJournal(t, dest)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	done := journaled(t, dest)
	short := 0
	for _, lengths := range journalLines(t, dest) {
		for _, n := range lengths {
			if n < 8<<20 {
				short++
			}
		}
	}
	if done <= 0 || done >= size || short == 0 {
		t.Fatalf("journal records %d bytes in %v, want tail pieces shorter than a part, and part of %d", done, journalLines(t, dest), size)
	}
	r := run(t, nil, s.cmd("get", "--json", "--max-concurrent-requests", "4", s.url("tail/"), dest)...)
	if r.code != 0 {
		t.Fatalf("rerun: exit %d\n%s", r.code, r.stderr)
	}
	if sent := s.emu.BytesSentFor(s.bucket, "tail/00000000"); sent != size-done {
		t.Fatalf("rerun: the server sent %d bytes, want exactly the %d the journal lacked", sent, size-done)
	}
	sum := summaryOf(t, r.stdout)
	if sum["overfetch_bytes"].(float64) != 0 || sum["gets_per_range"].(float64) != 1 {
		t.Errorf("rerun: overfetch %v bytes, %v GETs per range; want none, and one GET per range", sum["overfetch_bytes"], sum["gets_per_range"])
	}
	checkSynthetic(t, finalName(dest), "tail/00000000", size)
	tree(t, dest)
}
