package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/s3pd/s3pd/internal/testenv"
	"github.com/s3pd/s3pd/pkg/s3emu"
)

// xfsLoop mounts a fresh xfs over a loop device with direct I/O of its
// own (losetup --direct-io=on, so the loop device does not cache the
// image either), and returns the mount point.
func xfsLoop(t *testing.T) string {
	t.Helper()
	return testenv.Loop{Mkfs: []string{"mkfs.xfs", "-q", "-f"}, DirectIO: true}.Mount(t)
}

// cached returns the bytes of the files under dir (the work folder
// aside) that are in the page cache, by fincore, and their size.
func cached(t *testing.T, dir string) (res, size int64) {
	t.Helper()
	if _, err := exec.LookPath("fincore"); err != nil {
		unavailable(t, "fincore (util-linux) is not installed")
	}
	var files []string
	filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err == nil && e.Type().IsRegular() && !strings.Contains(p, "/.s3pd/") {
			files = append(files, p)
		}
		return err
	})
	if len(files) == 0 {
		t.Fatalf("no file under %s", dir)
	}
	out, err := exec.Command("fincore", append([]string{"--bytes", "--noheadings", "--raw", "-o", "RES,SIZE"}, files...)...).Output()
	if err != nil {
		t.Fatalf("fincore: %v", err)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(l)
		if len(f) != 2 {
			t.Fatalf("fincore line %q: want RES SIZE", l)
		}
		r, err1 := strconv.ParseInt(f[0], 10, 64)
		s, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("fincore line %q: not numbers", l)
		}
		res, size = res+r, size+s
	}
	return res, size
}

// odd is a dataset whose objects' sizes are no multiple of a block: a
// tail block in each, and parts that end off a block.
const odd = "big:2:20971523,small:3:4097"

// Landed with --direct-io on onto xfs, the objects leave under 5% of
// their pages in the page cache; with off, nearly all of them. Both land
// byte for byte, tail blocks included, and --json says which it was.
func TestDirectIOLeavesThePageCacheAlone(t *testing.T) {
	mnt := xfsLoop(t)
	s := emuStore(t, s3emu.Options{Dataset: odd})
	for _, tc := range []struct {
		mode     string
		min, max float64
	}{{"on", 0, 0.05}, {"off", 0.8, 1.01}} {
		dest := filepath.Join(mnt, tc.mode)
		r := run(t, nil, s.cmd("get", "--json", "--direct-io", tc.mode, "--partsize", "1MiB", "--multipart-threshold", "1MiB", s.url("*"), dest)...)
		if r.code != 0 {
			t.Fatalf("--direct-io %s: exit %d\n%s", tc.mode, r.code, r.stderr)
		}
		sum := jsonLines(t, r.stdout)["summary"][0]
		if sum["direct_io"] != tc.mode {
			t.Errorf("--direct-io %s: summary says direct_io %v (%v)", tc.mode, sum["direct_io"], sum["direct_io_reason"])
		}
		res, size := cached(t, dest)
		t.Logf("--direct-io %s: %d of %d bytes cached", tc.mode, res, size)
		if share := float64(res) / float64(size); share < tc.min || share >= tc.max {
			t.Errorf("--direct-io %s: %d of %d bytes in the page cache (%.1f%%), want %.0f%% to %.0f%%",
				tc.mode, res, size, 100*share, 100*tc.min, 100*tc.max)
		}
		for _, key := range []string{"big/00000000", "big/00000001", "small/00000000", "small/00000002"} {
			size := 20971523
			if strings.HasPrefix(key, "small") {
				size = 4097
			}
			checkSynthetic(t, filepath.Join(dest, key), key, size)
		}
	}
}

// A run killed with direct I/O on resumes byte for byte, fetching only
// what its journal lacks.
func TestDirectIOKillThenResume(t *testing.T) {
	const size = 48<<20 + 1234
	mnt := xfsLoop(t)
	s := emuStore(t, s3emu.Options{Dataset: "big:1:" + strconv.Itoa(size), ConnRate: 3 << 20})
	dest := filepath.Join(mnt, "dest")
	args := s.cmd("get", "--direct-io", "on", "--partsize", "1MiB", "--threads", "4", s.url("big/"), dest)
	cmd, _ := startGet(t, args...)
	waitForJournaled(t, dest, 4<<20)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	done := journaled(t, dest)
	if done <= 0 || done >= size {
		t.Fatalf("journal records %d bytes, want part of %d", done, size)
	}
	resetAfterDrain(t, s.emu)
	r := run(t, nil, args...)
	if r.code != 0 {
		t.Fatalf("rerun: exit %d\n%s", r.code, r.stderr)
	}
	if sent := s.emu.BytesSentFor(s.bucket, "big/00000000"); sent != size-done {
		t.Errorf("rerun fetched %d bytes, want exactly the %d the journal lacked", sent, size-done)
	}
	if !strings.Contains(r.stdout, "direct I/O: on") {
		t.Errorf("the summary does not say direct I/O was on:\n%s", r.stdout)
	}
	checkSynthetic(t, finalName(dest), "big/00000000", size)
	tree(t, dest) // no temporary files left
}

// Where the file system refuses O_DIRECT (injected: every disk here
// takes it), the run writes through the page cache, says so in one
// line, and the summary and --json say fallback with the reason.
func TestDirectIOFallbackIsSaidOnce(t *testing.T) {
	s := emuStore(t, s3emu.Options{Dataset: odd})
	refuse := []string{"S3PD_TEST_REFUSE_DIRECT_IO=1"}
	dest := t.TempDir()
	r := run(t, refuse, s.cmd("get", "--json", "--direct-io", "on", "--partsize", "1MiB", s.url("*"), dest)...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	sum := jsonLines(t, r.stdout)["summary"][0]
	if reason, _ := sum["direct_io_reason"].(string); sum["direct_io"] != "fallback" || !strings.Contains(reason, "O_DIRECT") {
		t.Errorf("summary: direct_io %v, reason %q; want fallback and why", sum["direct_io"], reason)
	}
	if n := strings.Count(r.stderr, "direct I/O"); n != 1 {
		t.Errorf("stderr says direct I/O %d times, want once:\n%s", n, r.stderr)
	}
	checkSynthetic(t, filepath.Join(dest, "big/00000001"), "big/00000001", 20971523)
	r = run(t, refuse, s.cmd("get", "--direct-io", "on", "--overwrite", s.url("small/"), t.TempDir())...)
	if r.code != 0 || !strings.Contains(r.stdout, "direct I/O: fallback (open with O_DIRECT") {
		t.Errorf("exit %d; the human summary should say the fallback and why:\n%s", r.code, r.stdout)
	}
}
