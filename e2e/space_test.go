package e2e

import (
	"strings"
	"testing"

	"github.com/s3pd/s3pd/pkg/s3emu"
)

// TestGetChecksSpaceFirst: before the first byte, what the listing
// selects, less what DEST holds already, is compared with the free
// space of DEST's file system (a 10 MiB tmpfs): too much is exit 2 with
// both figures and the flag that goes ahead anyway, and no GET sent.
func TestGetChecksSpaceFirst(t *testing.T) {
	needRoot(t)
	s := emuStore(t, s3emu.Options{Dataset: "m:4:3MiB", LogRequests: true}) // 12 MiB
	dest := t.TempDir()
	mount(t, dest, "-t", "tmpfs", "-o", "size=10m", "tmpfs")
	gets := func() int {
		n := 0
		for _, r := range s.emu.Log() {
			if r.Method == "GET" && strings.HasPrefix(r.Key, "m/") {
				n++
			}
		}
		return n
	}
	tests := []struct {
		name     string
		flags    []string
		code     int
		stderr   []string // what the error says
		fetched  bool     // GETs of object data were sent
		leftover int      // files at DEST after the run
	}{
		{"does not fit", nil, 2, []string{"not enough space in " + dest, "12.0 MiB still to write", "free on its file system", "--no-space-check"}, false, 0},
		{"what is selected fits", []string{"--exclude", "*", "--include", "0000000[12]"}, 0, nil, true, 2},
		{"what is already there is not counted", nil, 2, []string{"6.00 MiB still to write"}, false, 2},
		{"a dry run is not checked", []string{"--dry-run"}, 0, nil, false, 2},
		{"--no-space-check goes ahead", []string{"--no-space-check"}, 1, []string{"no space left on device"}, true, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := gets()
			r := run(t, nil, s.cmd("get", append(tt.flags, s.url("m/"), dest)...)...)
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d\n%s", r.code, tt.code, r.stderr)
			}
			for _, w := range tt.stderr {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
				}
			}
			if tt.code == 2 && strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
				t.Errorf("the refusal is not one line:\n%s", r.stderr)
			}
			if got := gets() > before; got != tt.fetched {
				t.Errorf("object GETs sent: %v, want %v", got, tt.fetched)
			}
			if got := len(tree(t, dest)); got != tt.leftover && tt.code != 1 {
				t.Errorf("%d files at DEST, want %d", got, tt.leftover)
			}
		})
	}
}

// TestGetSpaceCheckStopsALongListing: past the first thousand objects
// the check goes on as the listing streams, and stops the run as soon
// as the total passes the free space, before the disk is full.
func TestGetSpaceCheckStopsALongListing(t *testing.T) {
	needRoot(t)
	s := emuStore(t, s3emu.Options{Dataset: "m:1500:8KiB"}) // 11.7 MiB
	dest := t.TempDir()
	mount(t, dest, "-t", "tmpfs", "-o", "size=10m", "tmpfs")
	r := run(t, nil, s.cmd("get", "--workers", "4", s.url("m/"), dest)...)
	if r.code != 2 || !strings.Contains(r.stderr, "not enough space in "+dest) {
		t.Fatalf("exit %d, want 2 naming the space\n%s", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, "no space left") {
		t.Errorf("the disk filled before the check stopped the run:\n%s", r.stderr)
	}
}

// TestGetSpaceCheckCountsTheShard: a shard compares its share of the
// listing, not the whole, with the free space.
func TestGetSpaceCheckCountsTheShard(t *testing.T) {
	needRoot(t)
	s := emuStore(t, s3emu.Options{Dataset: "m:4:3MiB"}) // 12 MiB, 6 MiB a shard
	dest := t.TempDir()
	mount(t, dest, "-t", "tmpfs", "-o", "size=10m", "tmpfs")
	if r := run(t, nil, s.cmd("get", "--shard", "0/2", s.url("m/"), dest)...); r.code != 0 {
		t.Fatalf("shard 0/2 of 12 MiB into 10 MiB: exit %d\n%s", r.code, r.stderr)
	}
	if got := len(tree(t, dest)); got != 2 {
		t.Errorf("%d files landed, want the shard's 2", got)
	}
}
