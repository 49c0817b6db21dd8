package raid

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fakeSystem points at testdata/sys with a /dev of small files: empty ones
// (no signature) and an XFS superblock on nvme3n1.
func fakeSystem(t *testing.T) System {
	t.Helper()
	dev := t.TempDir()
	for _, n := range []string{"nvme0n1", "nvme1n1", "nvme2n1", "nvme4n1", "nvme5n1", "nvme6n1", "nvme7n1", "md5"} {
		if err := os.WriteFile(filepath.Join(dev, n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	xfs := make([]byte, 512)
	copy(xfs, "XFSB")
	copy(xfs[108:], "scratch")
	if err := os.WriteFile(filepath.Join(dev, "nvme3n1"), xfs, 0o600); err != nil {
		t.Fatal(err)
	}
	return System{SysRoot: "testdata/sys", DevRoot: dev, MountInfo: "testdata/mountinfo"}
}

func TestDiscover(t *testing.T) {
	devs, err := fakeSystem(t).Discover()
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		kind    Kind
		size    int64
		root    bool
		reasons []string
	}
	wants := map[string]want{
		"md5":     {KindArray, 209584128 * 512, false, []string{"is an md array"}},
		"nvme0n1": {KindEBS, 8 << 30, true, []string{"holds the root filesystem", "mounted at /", "partitioned (nvme0n1p1, nvme0n1p128)"}},
		"nvme1n1": {KindInstanceStore, 3662109375 * 512, false, nil},
		"nvme2n1": {KindInstanceStore, 3662109375 * 512, false, nil},
		"nvme3n1": {KindInstanceStore, 3662109375 * 512, false, []string{"holds data (xfs signature)"}},
		"nvme4n1": {KindEBS, 100 << 30, false, []string{"mounted at /data"}},
		"nvme5n1": {KindEBS, 100 << 30, false, []string{"member of md5"}},
		"nvme6n1": {KindEBS, 200 << 30, false, nil},
		"nvme7n1": {KindInstanceStore, 3662109375 * 512, false, []string{"partitioned (nvme7n1p1)"}},
	}
	var names []string
	for _, d := range devs {
		names = append(names, d.Name)
		w, ok := wants[d.Name]
		if !ok {
			continue
		}
		if d.Kind != w.kind || d.Size != w.size || d.Root != w.root {
			t.Errorf("%s: got kind %s size %d root %v, want %s %d %v", d.Name, d.Kind, d.Size, d.Root, w.kind, w.size, w.root)
		}
		if !slices.Equal(d.Reasons, w.reasons) {
			t.Errorf("%s: got reasons %q, want %q", d.Name, d.Reasons, w.reasons)
		}
		if d.Usable != (len(w.reasons) == 0) {
			t.Errorf("%s: got usable %v, want %v", d.Name, d.Usable, len(w.reasons) == 0)
		}
		if d.Path != "/dev/"+d.Name {
			t.Errorf("%s: got path %s", d.Name, d.Path)
		}
		if d.Unchecked != "" {
			t.Errorf("%s: got unchecked %q, want none", d.Name, d.Unchecked)
		}
	}
	wantNames := []string{"md5", "nvme0n1", "nvme1n1", "nvme2n1", "nvme3n1", "nvme4n1", "nvme5n1", "nvme6n1", "nvme7n1"}
	if !slices.Equal(names, wantNames) {
		t.Errorf("got devices %v, want %v (loop0 is empty and zram0 is RAM)", names, wantNames)
	}
	byName := map[string]Device{}
	for _, d := range devs {
		byName[d.Name] = d
	}
	if got := byName["nvme0n1"].Serial; got != "vol0123456789abcdef0" {
		t.Errorf("nvme0n1 serial: got %q, want the EBS volume id", got)
	}
	if got := byName["nvme1n1"].Model; got != ModelInstanceStore {
		t.Errorf("nvme1n1 model: got %q, want %q (trimmed)", got, ModelInstanceStore)
	}
	if got := byName["nvme3n1"].Label; got != "scratch" {
		t.Errorf("nvme3n1 label: got %q, want scratch", got)
	}
}

func TestDiscoverRootThroughArray(t *testing.T) {
	sys := fakeSystem(t)
	mi := filepath.Join(t.TempDir(), "mountinfo")
	if err := os.WriteFile(mi, []byte("27 1 9:5 / / rw - ext4 /dev/md5 rw\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sys.MountInfo = mi
	devs, err := sys.Discover()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range devs {
		wantRoot := d.Name == "md5" || d.Name == "nvme5n1"
		if d.Root != wantRoot {
			t.Errorf("%s: got root %v, want %v (/ is on md5 over nvme5n1)", d.Name, d.Root, wantRoot)
		}
	}
}

func TestDiscoverUnreadableDevice(t *testing.T) {
	sys := fakeSystem(t)
	if err := os.Remove(filepath.Join(sys.DevRoot, "nvme1n1")); err != nil {
		t.Fatal(err)
	}
	devs, err := sys.Discover()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range devs {
		if d.Name != "nvme1n1" {
			continue
		}
		if d.Unchecked == "" || !d.Usable {
			t.Errorf("got unchecked %q usable %v, want a note and still usable", d.Unchecked, d.Usable)
		}
	}
}

func TestDiscoverMissingSysfs(t *testing.T) {
	sys := fakeSystem(t)
	sys.SysRoot = filepath.Join(t.TempDir(), "nosys")
	if _, err := sys.Discover(); err == nil || !strings.Contains(err.Error(), "nosys") {
		t.Errorf("got %v, want an error naming the missing directory", err)
	}
}

func TestReadMountInfo(t *testing.T) {
	ms, err := ReadMountInfo("testdata/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	m, ok := mountAt(ms, "/mnt/my disk")
	if !ok || m.FSType != "tmpfs" || m.Dev != "0:40" {
		t.Errorf("got %+v %v, want the tmpfs at \"/mnt/my disk\" (unescaped)", m, ok)
	}
	m, ok = mountAt(ms, "/")
	if !ok || m.Source != "/dev/nvme0n1p1" || m.Dev != "259:1" {
		t.Errorf("got %+v, want / from /dev/nvme0n1p1 259:1", m)
	}
	if _, err := parseMountInfoLine("1 2 3:4 / /x rw"); err == nil {
		t.Error("got no error for a line without the separator")
	}
}
