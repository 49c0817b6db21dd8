package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/s3pd/s3pd/pkg/s3emu"
)

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		unavailable(t, "needs root to mount (CI runs as root)")
	}
}

// mount runs mount(8) and unmounts at cleanup.
func mount(t *testing.T, target string, args ...string) {
	t.Helper()
	if out, err := exec.Command("mount", append(args, target)...).CombinedOutput(); err != nil {
		unavailable(t, "mount %v %s: %v: %s", args, target, err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", target).Run() })
}

func TestGetUnwritableDest(t *testing.T) {
	needRoot(t)
	s := emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory, LogRequests: true})
	s.put(t, "p/a", []byte("data"))
	dir := t.TempDir()
	mount(t, dir, "--bind", dir)
	if out, err := exec.Command("mount", "-o", "remount,bind,ro", dir).CombinedOutput(); err != nil {
		unavailable(t, "remount read-only: %v: %s", err, out)
	}
	for _, dest := range []string{dir, filepath.Join(dir, "sub")} {
		r := run(t, nil, s.cmd("get", s.url("p/"), dest)...)
		if r.code != 2 || !strings.Contains(r.stderr, "not writable") || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Fatalf("get into read-only %s: exit %d, stderr %q; want 2 and one line saying not writable", dest, r.code, r.stderr)
		}
	}
	for _, req := range s.emu.Log() {
		if req.Method == "GET" && req.Key != "" {
			t.Fatalf("a GET was sent before the destination was found unwritable: %+v", req)
		}
	}
}

func TestGetHonoursUmask(t *testing.T) {
	s := emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory})
	s.put(t, "p/a", []byte("data"))
	dest := t.TempDir()
	cmd := exec.Command("sh", append([]string{"-c", `umask 027 && exec "$0" "$@"`, bin}, s.cmd("get", s.url("p/"), dest)...)...)
	cmd.Env = baseEnv(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("get: %v\n%s", err, out)
	}
	st, err := os.Stat(filepath.Join(dest, "a"))
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Mode().Perm(); got != 0o640 {
		t.Fatalf("mode %v under umask 027, want -rw-r-----", st.Mode())
	}
	if st.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
		t.Fatalf("mode %v has setuid or setgid", st.Mode())
	}
}

func TestGetDiskFull(t *testing.T) {
	needRoot(t)
	s := emuStore(t, s3emu.Options{Dataset: "big:1:4MiB"})
	dest := t.TempDir()
	mount(t, dest, "-t", "tmpfs", "-o", "size=1m", "s3pd-full")
	// --no-space-check: the write error itself is under test (the check
	// before the first byte is TestGetChecksSpaceFirst's).
	r := run(t, nil, s.cmd("get", "--partsize", "1MiB", "--no-space-check", s.url(""), dest)...)
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "no space left") {
		t.Fatalf("stderr does not say the disk is full:\n%s", r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dest, "big", "00000000")); !os.IsNotExist(err) {
		t.Fatalf("a file that did not fit is at its final name: %v", err)
	}
	tree(t, dest) // the temporary file was removed
	if st := s.emu.Stats(); st.GetRequests > 8 {
		t.Errorf("%d GETs for a 4-part object on a full disk: it was retried", st.GetRequests)
	}
}
