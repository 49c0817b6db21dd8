package e2e

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// versitygwBinary finds versitygw: $VERSITYGW_BIN, then the PATH, then
// where scripts/build-versitygw.sh puts it.
func versitygwBinary() string {
	if p := os.Getenv("VERSITYGW_BIN"); p != "" {
		return p
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache")
	}
	return filepath.Join(cache, "s3pd", "versitygw")
}

// versitygwStore starts versitygw over a POSIX directory, with the
// credentials the runs sign with (it checks every signature), and stops it
// by its PID when the test ends.
func versitygwStore(t *testing.T) *store {
	t.Helper()
	exe := versitygwBinary()
	if _, err := os.Stat(exe); err != nil {
		unavailable(t, "versitygw is not built (%s): run scripts/build-versitygw.sh (.ci/run does)", exe)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	root := t.TempDir()
	cmd := exec.Command(exe, "--access", "test", "--secret", "test", "--port", addr, "--quiet", "posix", root)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
	return startedStore(t, "versitygw", "http://"+addr)
}

// Keys with every printable ASCII character and non-ASCII ones are fetched
// from a server that checks signatures: s3pd escapes keys as S3's
// UriEncode does, so its signatures match the server's.
func TestVersitygwKeys(t *testing.T) {
	s := versitygwStore(t)
	want := map[string][]byte{}
	var keys []string
	for c := byte(0x20); c < 0x7f; c++ {
		if c == '/' || c == '\\' {
			continue // a separator; a backslash is one on some servers
		}
		keys = append(keys, fmt.Sprintf("p/k%c%c/x", c, c))
	}
	keys = append(keys, "p/a+b&c=d:e@f$g,h;i", "p/sp ace/€uro", "p/日本/ü", "p/~tilde/!(x)*'")
	for i, key := range keys {
		data := randomBytes(uint64(i), 100+i)
		s.put(t, key, data)
		want[strings.TrimPrefix(key, "p/")] = data
	}
	dest := t.TempDir()
	r := run(t, nil, s.cmd("get", s.url("p/"), dest)...)
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	sameTree(t, dest, want)
	// A single object with the characters url.PathEscape leaves alone.
	one := filepath.Join(t.TempDir(), "one")
	r = run(t, nil, s.cmd("get", s.url("p/a+b&c=d:e@f$g,h;i"), one)...)
	if r.code != 0 {
		t.Fatalf("single object: exit %d\n%s", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(one); sum(b) != sum(want["a+b&c=d:e@f$g,h;i"]) {
		t.Errorf("single object: wrong bytes")
	}
}
