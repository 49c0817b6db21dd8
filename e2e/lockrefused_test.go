//go:build linux && amd64

package e2e

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/s3pd/s3pd/pkg/local"
	"github.com/s3pd/s3pd/pkg/s3emu"
)

// launcher is what the test binary does with envNoFlock set: exec the
// s3pd binary named by its first argument under a seccomp filter that
// fails every flock(2) with ENOLCK, as a file system that refuses locks
// does (some NFS set-ups), where every file system here supports them.
var launcher = execWithoutFlock

// execWithoutFlock is the launcher's side, called from TestMain: it does
// not return.
func execWithoutFlock() {
	runtime.LockOSThread() // the filter is the thread's, and exec keeps it
	filter := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 4}, // seccomp_data.arch
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: unix.AUDIT_ARCH_X86_64, Jt: 0, Jf: 3},
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 0}, // seccomp_data.nr
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: unix.SYS_FLOCK, Jt: 0, Jf: 1},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOLCK)},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		os.Stderr.WriteString("no_new_privs: " + err.Error() + "\n")
		os.Exit(125)
	}
	if _, _, e := unix.Syscall(unix.SYS_PRCTL, unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&prog))); e != 0 {
		os.Stderr.WriteString("seccomp: " + e.Error() + "\n")
		os.Exit(125)
	}
	args := os.Args[1:]
	err := syscall.Exec(args[0], args, os.Environ())
	os.Stderr.WriteString("exec: " + err.Error() + "\n")
	os.Exit(125)
}

// TestLockRefusedByTheFileSystem: where flock fails (ENOLCK), get exits
// 2 before any request with one line naming --no-lock, and writes
// nothing; with --no-lock it runs, and leaves no work folder.
func TestLockRefusedByTheFileSystem(t *testing.T) {
	s := emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory})
	s.put(t, "l/a", []byte("locked out"))
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The launcher is this test binary: bin becomes its argument.
	launch := func(args ...string) result {
		saved := bin
		defer func() { bin = saved }()
		bin = self
		return run(t, []string{envNoFlock + "=1"}, append([]string{saved}, args...)...)
	}
	dest := t.TempDir()
	before := s.emu.Stats().GetRequests
	r := launch(s.cmd("get", s.url("l/"), dest)...)
	if r.code != 2 || !strings.Contains(r.stderr, "--no-lock") || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Fatalf("flock refused: exit %d, stderr %q; want exit 2 and one line naming --no-lock", r.code, r.stderr)
	}
	if n := s.emu.Stats().GetRequests - before; n != 0 {
		t.Errorf("%d GETs before the refusal, want none", n)
	}
	if entries, _ := os.ReadDir(dest); len(entries) != 0 {
		t.Errorf("DEST after the refusal holds %v", entries)
	}
	r = launch(s.cmd("get", "--no-lock", s.url("l/"), dest)...)
	if r.code != 0 {
		t.Fatalf("--no-lock: exit %d\n%s", r.code, r.stderr)
	}
	sameTree(t, dest, map[string][]byte{"a": []byte("locked out")})
	if _, err := os.Stat(filepath.Join(dest, local.WorkDir)); !os.IsNotExist(err) {
		t.Errorf("work folder after --no-lock: %v", err)
	}
}
