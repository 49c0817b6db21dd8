package testenv

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// WarmPages touches n bytes of fresh memory and gives them back, just
// before a timed run that writes about n bytes into tmpfs. The machines
// here are virtual and report freed memory to their host, which takes
// it back; the first touch of such a page then waits for the host, and a
// 2 GiB copy on tmpfs took 3-8 s after a pause where it took 1.1-2.6 s
// right after as much memory was touched and freed (the run is given the
// pages just freed). Without it a benchmark measures when the host last
// took memory back.
func WarmPages(tb testing.TB, n int64) {
	tb.Helper()
	m, err := unix.Mmap(-1, 0, int(n), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		tb.Fatalf("warm %d bytes: %v", n, err)
	}
	for i := 0; i < len(m); i += os.Getpagesize() {
		m[i] = 1
	}
	if err := unix.Munmap(m); err != nil {
		tb.Fatalf("warm %d bytes: %v", n, err)
	}
}
