package local

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/s3pd/s3pd/internal/testenv"
)

// loopFS mounts a fresh file system made by mkfs (its arguments before
// the device) over a loop device, and returns the mount point.
func loopFS(t *testing.T, mkfs ...string) string {
	t.Helper()
	return testenv.Loop{Mkfs: mkfs}.Mount(t)
}

// used is the bytes in use on the file system holding dir, once what is
// written has reached it.
func used(t *testing.T, dir string) int64 {
	t.Helper()
	unix.Sync()
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		t.Fatal(err)
	}
	return int64(fs.Blocks-fs.Bfree) * fs.Bsize
}

// TestCopyReflinks: on xfs and btrfs a file copied in parts, one kernel
// copy at a time, shares the source's blocks (copy_file_range clones
// them) and reads the same.
func TestCopyReflinks(t *testing.T) {
	const size = 32 << 20
	for _, mkfs := range [][]string{{"mkfs.xfs", "-q", "-f", "-m", "reflink=1"}, {"mkfs.btrfs", "-q", "-f"}} {
		t.Run(strings.TrimPrefix(mkfs[0], "mkfs."), func(t *testing.T) {
			mnt := loopFS(t, mkfs...)
			src, dst := filepath.Join(mnt, "src"), filepath.Join(mnt, "dst")
			p := filepath.Join(src, "f")
			randomFile(t, p, size, 0o644, time.Now())
			before := used(t, mnt)
			if got := copyTree(t, src, dst, SourceOptions{}, false, true, 4<<20); got.Objects != 1 || got.Bytes != size {
				t.Fatalf("copied %d objects, %d bytes, want 1, %d", got.Objects, got.Bytes, size)
			}
			if sum(t, p) != sum(t, filepath.Join(dst, "f")) {
				t.Fatal("the copy reads differently")
			}
			if grew := used(t, mnt) - before; grew > size/2 {
				t.Errorf("the copy took %d bytes of the file system, want at most %d (its blocks shared)", grew, size/2)
			}
		})
	}
}
