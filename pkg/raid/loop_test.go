package raid

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/s3pd/s3pd/internal/testenv"
)

// needRoot skips a test that needs root and the given tools.
func needRoot(t *testing.T, tools ...string) {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.Unavailable(t, "needs root for loop devices and mount; run the tests as root to cover them")
	}
	for _, tool := range append([]string{"losetup", "mount", "umount", "blkid", "wipefs"}, tools...) {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.Unavailable(t, "%s is not installed (%s); scripts/ci-raid-deps.sh installs it", tool, InstallHint(tool))
		}
	}
}

// loopDevice attaches a sparse file of size bytes to a free loop device and
// detaches it when the test ends.
func loopDevice(t *testing.T, size int64) string {
	t.Helper()
	img := filepath.Join(t.TempDir(), "disk.img")
	f, err := os.Create(img)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	f.Close()
	out, err := exec.Command("losetup", "-f", "--show", img).CombinedOutput()
	if err != nil {
		testenv.Unavailable(t, "no loop device available: losetup: %v: %s", err, out)
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() {
		if out, err := exec.Command("losetup", "-d", dev).CombinedOutput(); err != nil {
			t.Errorf("losetup -d %s: %v: %s", dev, err, out)
		}
	})
	return dev
}

// unmountAtEnd unmounts dir when the test ends if it is still mounted.
func unmountAtEnd(t *testing.T, dir string) {
	t.Cleanup(func() {
		ms, err := ReadMountInfo("/proc/self/mountinfo")
		if err != nil {
			t.Error(err)
			return
		}
		if _, ok := mountAt(ms, dir); ok {
			if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
				t.Errorf("umount %s: %v: %s", dir, err, out)
			}
		}
	})
}

// mdStandIn runs every command for real except mdadm, which this kernel
// cannot run (no md driver): it pretends the array exists once created,
// so a loop device can stand in for /dev/mdN.
type mdStandIn struct {
	real    ExecRunner
	members map[string][]string
	calls   []string
}

func (r *mdStandIn) Run(ctx context.Context, name string, args ...string) ([]byte, error) {
	r.calls = append(r.calls, strings.Join(append([]string{name}, args...), " "))
	if name != "mdadm" {
		return r.real.Run(ctx, name, args...)
	}
	target := args[len(args)-1]
	switch args[0] {
	case "--create":
		r.members[args[1]] = args[6:]
	case "--stop":
		delete(r.members, target)
	case "--detail":
		ms, ok := r.members[target]
		if !ok {
			return nil, &CommandError{Cmd: append([]string{name}, args...), ExitCode: 1, Err: fmt.Errorf("exit status 1")}
		}
		var b strings.Builder
		for i, m := range ms {
			fmt.Fprintf(&b, "MD_DEVICE_m%d_ROLE=%d\nMD_DEVICE_m%d_DEV=%s\n", i, i, i, m)
		}
		return []byte(b.String()), nil
	}
	return nil, nil
}

func (r *mdStandIn) changes() []string {
	var out []string
	for _, c := range r.calls {
		if !strings.HasPrefix(c, "mdadm --detail") && !strings.HasPrefix(c, "blkid") {
			out = append(out, c)
		}
	}
	return out
}

// writeAndReadBack writes 8 MiB of random bytes under dir and reads them back.
func writeAndReadBack(t *testing.T, dir string) {
	t.Helper()
	want := make([]byte, 8<<20)
	rand.Read(want)
	f := filepath.Join(dir, "probe.bin")
	if err := os.WriteFile(f, want, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := exec.Command("sync").Run(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("read back bytes differ from those written")
	}
	if err := os.Remove(f); err != nil {
		t.Fatal(err)
	}
}

func ownerOf(t *testing.T, path string) string {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	u, err := user.LookupId(fmt.Sprint(fi.Sys().(*syscall.Stat_t).Uid))
	if err != nil {
		t.Fatal(err)
	}
	return u.Username
}

// TestLoopMDFilesystems formats, aligns, mounts, writes and reads a real
// filesystem on a loop device standing in for /dev/mdN, runs again to see
// nothing change, then tears it down.
func TestLoopMDFilesystems(t *testing.T) {
	tests := []struct {
		fs, tool, info string
		infoArgs       func(dev, mnt string) []string
		wantInfo       []string
	}{
		{"xfs", "mkfs.xfs", "xfs_info", func(_, mnt string) []string { return []string{mnt} }, []string{"sunit=128", "swidth=256 blks"}},
		{"ext4", "mkfs.ext4", "dumpe2fs", func(dev, _ string) []string { return []string{"-h", dev} }, []string{"RAID stride:              128", "RAID stripe width:        256"}},
	}
	for _, tt := range tests {
		t.Run(tt.fs, func(t *testing.T) {
			needRoot(t, tt.tool, tt.info)
			dir := t.TempDir()
			loop := loopDevice(t, 2<<30) // sparse; mkfs.xfs wants a 64 MiB log when striped
			mnt := filepath.Join(dir, "striped")
			unmountAtEnd(t, mnt)
			fstab := filepath.Join(dir, "fstab")
			inv := []Device{{Name: "nvme1n1", Path: "/dev/nvme1n1", Size: 1 << 40}, {Name: "nvme2n1", Path: "/dev/nvme2n1", Size: 1 << 40}}
			spec := Spec{Devices: []string{"/dev/nvme1n1", "/dev/nvme2n1"}, Name: filepath.Base(loop), FS: tt.fs,
				Mount: mnt, Owner: "nobody", Fstab: true, FstabFile: fstab}
			p, err := NewPlan(spec, inv)
			if err != nil {
				t.Fatal(err)
			}
			r := &mdStandIn{members: map[string][]string{}}
			env := Env{Runner: r, MountInfo: "/proc/self/mountinfo"}
			res, err := Apply(context.Background(), p, env)
			if err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(tt.info, tt.infoArgs(loop, mnt)...).CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v: %s", tt.info, err, out)
			}
			for _, w := range tt.wantInfo {
				if !strings.Contains(string(out), w) {
					t.Errorf("%s: got\n%s\nwant it to contain %q (512 KiB chunk over 2 devices, 4 KiB blocks)", tt.info, out, w)
				}
			}
			writeAndReadBack(t, mnt)
			if got := ownerOf(t, mnt); got != "nobody" {
				t.Errorf("got owner %s, want nobody", got)
			}
			uuid, err := exec.Command("blkid", "-p", "-s", "UUID", "-o", "value", loop).Output()
			if err != nil {
				t.Fatal(err)
			}
			wantLine := fmt.Sprintf("UUID=%s %s %s defaults,noatime,nofail 0 ", strings.TrimSpace(string(uuid)), mnt, tt.fs)
			if b, _ := os.ReadFile(fstab); !strings.HasPrefix(string(b), wantLine) || res.UUID != strings.TrimSpace(string(uuid)) {
				t.Errorf("got fstab %q and uuid %q, want a line starting %q", b, res.UUID, wantLine)
			}

			r.calls = nil
			res, err = Apply(context.Background(), p, env)
			if err != nil {
				t.Fatal(err)
			}
			if got := r.changes(); len(got) != 0 || res.Changed() {
				t.Errorf("second run: got changes %q, want none", got)
			}

			tres, err := Teardown(context.Background(), TeardownSpec{Name: filepath.Base(loop), Mount: mnt, FstabFile: fstab}, env)
			if err != nil {
				t.Fatal(err)
			}
			if !tres.Changed() {
				t.Error("teardown changed nothing")
			}
			ms, _ := ReadMountInfo("/proc/self/mountinfo")
			if _, ok := mountAt(ms, mnt); ok {
				t.Error("still mounted after teardown")
			}
			if b, _ := os.ReadFile(fstab); len(b) != 0 {
				t.Errorf("got fstab %q after teardown, want it empty", b)
			}
		})
	}
}

// TestLoopBtrfsEndToEnd stripes two loop devices with btrfs for real:
// discovery on the real /sys, plan, apply, a second run, teardown --wipe.
func TestLoopBtrfsEndToEnd(t *testing.T) {
	needRoot(t, "mkfs.btrfs", "btrfs")
	dir := t.TempDir()
	a, b := loopDevice(t, 256<<20), loopDevice(t, 256<<20)
	t.Cleanup(func() { // before the loops detach: drop the kernel's record of the members
		exec.Command("btrfs", "device", "scan", "--forget", a, b).Run()
	})
	mnt := filepath.Join(dir, "striped")
	unmountAtEnd(t, mnt)
	fstab := filepath.Join(dir, "fstab")
	spec := Spec{Striping: StripingBtrfs, Devices: []string{a, b}, Name: "s3pdtest", Mount: mnt, Fstab: true, FstabFile: fstab}
	sys := DefaultSystem()
	inv, err := sys.Discover()
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan(spec, inv)
	if err != nil {
		t.Fatal(err)
	}
	if p.InPlace {
		t.Fatal("fresh loop devices reported in place")
	}
	env := Env{Runner: ExecRunner{}, MountInfo: "/proc/self/mountinfo"}
	if _, err := Apply(context.Background(), p, env); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("btrfs", "filesystem", "df", mnt).CombinedOutput()
	if err != nil {
		t.Fatalf("btrfs filesystem df: %v: %s", err, out)
	}
	for _, w := range []string{"Data, RAID0", "Metadata, RAID1"} {
		if !strings.Contains(string(out), w) {
			t.Errorf("btrfs filesystem df: got\n%s\nwant %q", out, w)
		}
	}
	writeAndReadBack(t, mnt)

	// Again, from fresh discovery: the members now carry the filesystem and
	// one of them is mounted, and that is recognised as in place.
	inv, err = sys.Discover()
	if err != nil {
		t.Fatal(err)
	}
	p, err = NewPlan(spec, inv)
	if err != nil {
		t.Fatal(err)
	}
	if !p.InPlace {
		t.Error("second plan: got not in place")
	}
	res, err := Apply(context.Background(), p, env)
	if err != nil {
		t.Fatal(err)
	}
	if res.Changed() {
		t.Errorf("second run changed things: %+v", res.Outcomes)
	}

	td := TeardownSpec{Striping: StripingBtrfs, Name: "s3pdtest", Mount: mnt, FstabFile: fstab, Wipe: true, Members: []string{a, b}}
	if _, err := Teardown(context.Background(), td, env); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{a, b} {
		if typ, _, err := blkid(context.Background(), ExecRunner{}, d); err != nil || typ != "" {
			t.Errorf("%s after teardown --wipe: got type %q (%v), want none", d, typ, err)
		}
	}
	res, err = Teardown(context.Background(), td, env)
	if err != nil || res.Changed() {
		t.Errorf("second teardown: got %v, changed %v; want no changes", err, res != nil && res.Changed())
	}
}

// TestLoopRealMdadm runs the md engine with the real mdadm on two loop
// devices. Where the kernel has no md driver (as on the machines that build
// s3pd) mdadm --create fails, and the report must say nothing was changed;
// where it has one, the array is made, used and torn down.
func TestLoopRealMdadm(t *testing.T) {
	needRoot(t, "mdadm", "mkfs.xfs")
	const name = "md121"
	node := "/dev/" + name
	if _, err := os.Stat(node); err == nil {
		t.Skipf("%s exists; not touching it", node)
	}
	t.Cleanup(func() { os.Remove(node) }) // mdadm leaves the node behind when the kernel has no md
	dir := t.TempDir()
	a, b := loopDevice(t, 1<<30), loopDevice(t, 1<<30)
	mnt := filepath.Join(dir, "striped")
	unmountAtEnd(t, mnt)
	inv, err := DefaultSystem().Discover()
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan(Spec{Devices: []string{a, b}, Name: name, Mount: mnt}, inv)
	if err != nil {
		t.Fatal(err)
	}
	env := Env{Runner: ExecRunner{}, MountInfo: "/proc/self/mountinfo"}
	_, err = Apply(context.Background(), p, env)
	if err == nil {
		t.Log("this kernel has md: the array was made; tearing it down")
		if _, err := Teardown(context.Background(), TeardownSpec{Name: name, Mount: mnt, Wipe: true}, env); err != nil {
			t.Fatal(err)
		}
		return
	}
	pe, ok := err.(*PartialError)
	if !ok || pe.Step.Action != ActCreate {
		t.Fatalf("got %v, want a failure at the create step", err)
	}
	t.Logf("as reported:\n%v", err)
	if !strings.Contains(err.Error(), "nothing was changed by this run") || len(pe.Undo) != 0 {
		t.Errorf("got\n%v\nwant nothing changed and nothing to undo", err)
	}
	for _, d := range []string{a, b} {
		if typ, _, err := blkid(context.Background(), ExecRunner{}, d); err != nil || typ != "" {
			t.Errorf("%s after the failed create: got %q (%v), want no signature", d, typ, err)
		}
	}
}
