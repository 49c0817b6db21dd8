package local

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/s3pd/s3pd/internal/testenv"
)

// loopFS mounts a fresh file system made by mkfs (its arguments before
// the device) over a loop device backed by a sparse file on a disk, and
// returns the mount point; the mount and the device go when the test
// ends.
func loopFS(t *testing.T, mkfs ...string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.Unavailable(t, "a loop device needs root")
	}
	for _, tool := range []string{"losetup", mkfs[0], "mount", "umount"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.Unavailable(t, "%s is not installed (scripts/ci-raid-deps.sh installs it)", tool)
		}
	}
	dir := t.TempDir()
	var fs unix.Statfs_t
	if unix.Statfs(dir, &fs) == nil && fs.Type == unix.TMPFS_MAGIC {
		d, err := os.MkdirTemp("/var/tmp", "s3pd-local-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(d) })
		dir = d
	}
	img := filepath.Join(dir, "fs.img")
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, 512<<20); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("losetup", "-f", "--show", img).CombinedOutput()
	if err != nil {
		testenv.Unavailable(t, "no loop device: losetup: %v: %s", err, out)
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() {
		if out, err := exec.Command("losetup", "-d", dev).CombinedOutput(); err != nil {
			t.Errorf("losetup -d %s: %v: %s", dev, err, out)
		}
	})
	if out, err := exec.Command(mkfs[0], append(mkfs[1:], dev)...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v: %s", strings.Join(mkfs, " "), dev, err, out)
	}
	mnt := filepath.Join(dir, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", dev, mnt).CombinedOutput(); err != nil {
		t.Fatalf("mount %s: %v: %s", dev, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", mnt, err, out)
		}
	})
	return mnt
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
