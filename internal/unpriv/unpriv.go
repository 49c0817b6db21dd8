// Package unpriv lets a test that needs an unprivileged user run under CI,
// which runs as root: Rerun runs the calling test again in a child process
// as user nobody, so permission checks that root bypasses apply.
package unpriv

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// envChild marks the child, so that a child still running as root (its
// credentials not dropped) fails instead of passing vacuously.
const envChild = "S3PD_TEST_UNPRIVILEGED"

// Nobody is the user and group the child runs as.
const Nobody = 65534

// Rerun reports whether the caller should return at once: as root it runs
// the calling test (t.Name()) in a copy of the test binary as Nobody,
// fails t if that fails, and returns true; as any other user it returns
// false and the test goes on in this process. In the child, as root, it
// fails the test: the privileges were not dropped.
func Rerun(t *testing.T) bool {
	t.Helper()
	if os.Getenv(envChild) != "" {
		if os.Geteuid() == 0 {
			t.Fatal("the child of unpriv.Rerun still runs as root")
		}
		return false
	}
	if os.Geteuid() != 0 {
		return false
	}
	// go test builds into a directory only root can enter: copy the
	// binary where nobody can run it, and run it there.
	dir, err := os.MkdirTemp("", "s3pd-unpriv-") // t.TempDir's parent is 0700
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "test.bin")
	if err := copyFile(os.Args[0], bin); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run", "^"+t.Name()+"$", "-test.count", "1", "-test.v")
	cmd.Dir = dir
	cmd.Env = []string{envChild + "=1", "HOME=" + dir, "TMPDIR=" + os.TempDir(), "PATH=" + os.Getenv("PATH")}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: Nobody, Gid: Nobody}}
	out, err := cmd.CombinedOutput()
	t.Logf("as uid %d:\n%s", Nobody, out)
	if err != nil {
		t.Fatalf("%s as an unprivileged user: %v", t.Name(), err)
	}
	return true
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copy %s: %w", from, err)
	}
	return out.Close()
}
