package testenv

import (
	"cmp"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// Loop is a fresh file system over a loop device, for tests of what a
// real file system does (reflinks, direct I/O, fallocate).
type Loop struct {
	// Mkfs makes the file system: the command and its arguments before
	// the device, such as {"mkfs.xfs", "-q", "-f"}.
	Mkfs []string
	// Size is the image's size (default 512 MiB, sparse).
	Size int64
	// DirectIO backs the loop device with direct I/O of its own
	// (losetup --direct-io=on), so that it does not cache the image
	// either.
	DirectIO bool
}

// Mount makes the file system and mounts it, and returns the mount
// point; the mount and the device go when the test ends. The image sits
// on a disk, never on tmpfs, where the loop device's blocks would be
// held in the page cache. Without root or the tools the test is
// Unavailable.
func (l Loop) Mount(t testing.TB) string {
	t.Helper()
	if os.Geteuid() != 0 {
		Unavailable(t, "a loop device needs root")
	}
	for _, tool := range []string{"losetup", l.Mkfs[0], "mount", "umount"} {
		if _, err := exec.LookPath(tool); err != nil {
			Unavailable(t, "%s is not installed (scripts/ci-raid-deps.sh installs it)", tool)
		}
	}
	dir := t.TempDir()
	var fs unix.Statfs_t
	if unix.Statfs(dir, &fs) == nil && fs.Type == unix.TMPFS_MAGIC {
		d, err := os.MkdirTemp("/var/tmp", "s3pd-loop-")
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
	if err := os.Truncate(img, cmp.Or(l.Size, 512<<20)); err != nil {
		t.Fatal(err)
	}
	args := []string{"-f", "--show"}
	if l.DirectIO {
		args = append(args, "--direct-io=on")
	}
	out, err := exec.Command("losetup", append(args, img)...).CombinedOutput()
	if err != nil {
		Unavailable(t, "no loop device: losetup: %v: %s", err, out)
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() {
		if out, err := exec.Command("losetup", "-d", dev).CombinedOutput(); err != nil {
			t.Errorf("losetup -d %s: %v: %s", dev, err, out)
		}
	})
	if out, err := exec.Command(l.Mkfs[0], append(l.Mkfs[1:], dev)...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v: %s", strings.Join(l.Mkfs, " "), dev, err, out)
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
