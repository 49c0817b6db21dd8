package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// runIn runs s3pd with args in dir, with the test's clean environment.
func runIn(t *testing.T, dir string, args ...string) result {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir, cmd.Env = dir, baseEnv(t)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestCompletionIsNotACopy: in a folder that holds completion/, the
// completion command prints a script and copies nothing, and two local
// paths without a command copy nothing either.
func TestCompletionIsNotACopy(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "completion"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "completion", "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		r := runIn(t, dir, "completion", shell)
		if r.code != 0 || !strings.Contains(r.stdout, "s3pd") {
			t.Errorf("completion %s: exit %d, %d bytes of script\n%s", shell, r.code, len(r.stdout), r.stderr)
		}
		if _, err := os.Stat(filepath.Join(dir, shell)); err == nil {
			t.Errorf("completion %s copied completion/ to %s/", shell, shell)
		}
	}
	r := runIn(t, dir, "completion", "other")
	if r.code != 2 {
		t.Errorf("s3pd completion other: exit %d, want 2", r.code)
	}
	if _, err := os.Stat(filepath.Join(dir, "other")); err == nil {
		t.Error("completion other copied completion/ to other/")
	}
}

// TestCpIsCopy: cp is an alias of copy.
func TestCpIsCopy(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	data := randomBytes(31, 3000)
	if err := os.WriteFile(filepath.Join(src, "a"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	r := runIn(t, t.TempDir(), "cp", "--quiet", src, dst)
	if r.code != 0 {
		t.Fatalf("s3pd cp: exit %d\n%s", r.code, r.stderr)
	}
	sameTree(t, dst, map[string][]byte{"a": data})
}
