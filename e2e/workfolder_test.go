package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/s3pd/s3pd/pkg/local"
	"github.com/s3pd/s3pd/pkg/s3emu"
)

// TestWorkFolderGoesWhenNothingIsLeftToResume: a run killed with a low
// multipart threshold leaves journals; a rerun with the default one
// fetches those objects in one request each and so never looks their
// journals up. It still ends with no work folder: what a run does not
// keep for a rerun goes, whatever the thresholds of this run and the
// last.
func TestWorkFolderGoesWhenNothingIsLeftToResume(t *testing.T) {
	// The killed run's server stalls some GETs for good, so the run
	// cannot finish (and remove its journals) before the kill; the rerun
	// gets the same synthetic bytes from a server that does not stall.
	first := emuStore(t, s3emu.Options{Dataset: "w:4:3MiB", ConnRate: 512 << 10,
		Stalls: s3emu.Stalls{Fraction: 0.3, For: time.Minute, Seed: 5}})
	s := emuStore(t, s3emu.Options{Dataset: "w:4:3MiB", ConnRate: 512 << 10})
	dest := t.TempDir()
	killMidway(t, first.cmd("get", "--multipart-threshold", "1MiB", "--partsize", "1MiB", first.url("w/"), dest))
	if js, _ := filepath.Glob(filepath.Join(dest, local.WorkDir, "*.journal")); len(js) == 0 {
		t.Fatal("the killed run left no journal")
	}
	r := run(t, nil, s.cmd("get", s.url("w/"), dest)...)
	if r.code != 0 {
		t.Fatalf("rerun: exit %d\n%s", r.code, r.stderr)
	}
	if left, err := os.ReadDir(filepath.Join(dest, local.WorkDir)); !os.IsNotExist(err) {
		t.Errorf("work folder after a rerun that keeps nothing: %d entries (%v)", len(left), err)
	}
	ds, _ := s3emu.ParseDataset("w:4:3MiB")
	sameTree(t, dest, wantSynthetic(t, ds, "w/", "w/00000000", "w/00000001", "w/00000002", "w/00000003"))
}

// TestKeptForResumeCountsWhatARerunResumes: Ctrl-C counts an object as
// kept for resume only when its partial file keeps a durable part the
// rerun looks up: below the multipart threshold nothing is (each object
// is one request, with no journal), so none is said to be kept; above
// it, the count equals the objects the rerun resumes.
func TestKeptForResumeCountsWhatARerunResumes(t *testing.T) {
	s := emuStore(t, s3emu.Options{Dataset: "k:6:3MiB", ConnRate: 512 << 10})
	interrupt := func(dest string, wait func(), args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, append(s.cmd("get", args...), s.url("k/"), dest)...)
		cmd.Env = baseEnv(t)
		var stdout bytes.Buffer
		cmd.Stdout = &stdout
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		wait()
		cmd.Process.Signal(syscall.SIGINT)
		cmd.Wait()
		if code := cmd.ProcessState.ExitCode(); code != 130 {
			t.Fatalf("exit %d, want 130", code)
		}
		return stdout.String()
	}
	// Below the threshold: bytes arrive, nothing is journaled.
	dest := t.TempDir()
	s.emu.ResetStats()
	out := interrupt(dest, func() {
		awaitEmu(t, s.emu, 30*time.Second, "a MiB sent", func(st s3emu.Stats) bool { return st.BytesSent >= 1<<20 })
	}, "--multipart-threshold", "64MiB")
	if strings.Contains(out, "kept for resume") || !strings.Contains(out, "no part on disk to keep") {
		t.Errorf("below the threshold, the summary says:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(dest, local.WorkDir)); !os.IsNotExist(err) {
		t.Errorf("work folder after an interruption that kept nothing: %v", err)
	}
	// Above it: the count is what the rerun resumes.
	dest = t.TempDir()
	out = interrupt(dest, func() { waitForJournal(t, dest) }, "--json", "--multipart-threshold", "1MiB", "--partsize", "1MiB")
	var first, rerun struct {
		Interrupted    int64 `json:"interrupted"`
		Kept           int64 `json:"kept_for_resume"`
		ResumedObjects int64 `json:"resumed_objects"`
	}
	if err := json.Unmarshal([]byte(lineWith(out, `"type":"summary"`)), &first); err != nil || first.Kept < 1 {
		t.Fatalf("interrupted summary %+v (%v): want at least one object kept\n%s", first, err, out)
	}
	r := run(t, nil, s.cmd("get", "--json", "--multipart-threshold", "1MiB", "--partsize", "1MiB", s.url("k/"), dest)...)
	if err := json.Unmarshal([]byte(lineWith(r.stdout, `"type":"summary"`)), &rerun); r.code != 0 || err != nil {
		t.Fatalf("rerun: exit %d, %v\n%s", r.code, err, r.stderr)
	}
	if rerun.ResumedObjects != first.Kept {
		t.Errorf("%d objects said to be kept for resume, the rerun resumed %d", first.Kept, rerun.ResumedObjects)
	}
}

// lineWith is the last line of out that contains sub.
func lineWith(out, sub string) string {
	lines := strings.Split(out, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], sub) {
			return lines[i]
		}
	}
	return ""
}

// TestResumeSurvivesTamperedJournals: journals edited (a part's length
// or sum changed), truncated (mid-line, or to nothing) or swapped
// between two objects after a kill. The rerun trusts no journal line it
// cannot prove against the partial file: a swapped journal names
// another object and is ignored, an edited line fails its read-back and
// that part is fetched again, a torn one ends the journal there. Every
// file arrives byte for byte, exit 0, and no work folder remains.
func TestResumeSurvivesTamperedJournals(t *testing.T) {
	const size = 8 << 20
	tamper := map[string]func(t *testing.T, journals []string){
		"length edited": func(t *testing.T, js []string) {
			editJournal(t, js[0], func(lines []string) {
				f := strings.Fields(lines[1])
				f[1] = strconv.Itoa(size) // claims the whole object
				lines[1] = strings.Join(f, " ")
			})
		},
		"sum edited": func(t *testing.T, js []string) {
			editJournal(t, js[0], func(lines []string) {
				f := strings.Fields(lines[1])
				if len(f) == 3 {
					last := "0"
					if strings.HasSuffix(f[2], "0") {
						last = "1"
					}
					f[2] = f[2][:len(f[2])-1] + last
				} else {
					f = append(f, "crc64nvme=1234")
				}
				lines[1] = strings.Join(f, " ")
			})
		},
		"truncated mid-line": func(t *testing.T, js []string) {
			b, _ := os.ReadFile(js[0])
			header := strings.IndexByte(string(b), '\n')
			if err := os.WriteFile(js[0], b[:header+4], 0o666); err != nil {
				t.Fatal(err)
			}
		},
		"truncated to nothing": func(t *testing.T, js []string) {
			if err := os.Truncate(js[0], 0); err != nil {
				t.Fatal(err)
			}
		},
		"swapped": func(t *testing.T, js []string) {
			tmp := js[0] + ".swap"
			for _, mv := range [][2]string{{js[0], tmp}, {js[1], js[0]}, {tmp, js[1]}} {
				if err := os.Rename(mv[0], mv[1]); err != nil {
					t.Fatal(err)
				}
			}
		},
	}
	for name, change := range tamper {
		t.Run(name, func(t *testing.T) {
			s := emuStore(t, s3emu.Options{Dataset: "j:2:8MiB", ConnRate: 512 << 10})
			dest := t.TempDir()
			// Two parts of 2 s each at a time: each object journals its
			// first parts well before it ends.
			args := s.cmd("get", "--partsize", "1MiB", "--threads", "2", s.url("j/"), dest)
			cmd, _ := startGet(t, args...)
			if !eventually(30*time.Second, func() bool {
				js, _ := filepath.Glob(filepath.Join(dest, local.WorkDir, "*.journal"))
				return len(js) == 2 && len(journalLines(t, dest)[0]) > 0 && len(journalLines(t, dest)[1]) > 0
			}) {
				t.Fatal("two journals with a part each did not appear within 30s")
			}
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
			js, _ := filepath.Glob(filepath.Join(dest, local.WorkDir, "*.journal"))
			if len(js) != 2 {
				t.Fatalf("journals after the kill: %v", js)
			}
			change(t, js)
			r := run(t, nil, s.cmd("get", "--json", "--partsize", "1MiB", s.url("j/"), dest)...)
			if r.code != 0 {
				t.Fatalf("rerun: exit %d\n%s", r.code, r.stderr)
			}
			for _, k := range []string{"j/00000000", "j/00000001"} {
				checkSynthetic(t, filepath.Join(dest, strings.TrimPrefix(k, "j/")), k, size)
			}
			if n := strings.Count(r.stdout, `"verification":"verified"`); n != 2 {
				t.Errorf("%d objects verified, want 2\n%s", n, r.stdout)
			}
			if _, err := os.Stat(filepath.Join(dest, local.WorkDir)); !os.IsNotExist(err) {
				t.Errorf("work folder after the rerun: %v", err)
			}
		})
	}
}

// editJournal rewrites the journal at path through edit, which gets its
// lines (the header first) and changes them in place.
func editJournal(t *testing.T, path string, edit func(lines []string)) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) < 2 {
		t.Fatalf("journal %s has no part line: %q", path, b)
	}
	edit(lines)
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o666); err != nil {
		t.Fatal(err)
	}
}
