package diskbench

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/s3pd/s3pd/internal/testenv"
)

func TestRunWritesEveryByteAndCleansUp(t *testing.T) {
	dir := t.TempDir()
	opts := Options{Files: 3, FileSize: 5<<20 + 4096, PartSize: 1 << 20, Writers: 4, BufferSize: 64 << 10}
	res, err := Run(context.Background(), dir, opts, Modes)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != len(Modes) {
		t.Fatalf("%d results, want %d", len(res), len(Modes))
	}
	for _, r := range res {
		if r.Unsupported != "" {
			if !r.Direct {
				t.Errorf("%s unsupported (%s): buffered writes work everywhere", r.Mode, r.Unsupported)
			}
			continue
		}
		if r.Bytes != 3*opts.FileSize || r.Write <= 0 || r.Elapsed < r.Write || r.BytesPerSecond() <= 0 {
			t.Errorf("%s: %+v, want %d bytes, a write time and an elapsed time at least as long", r.Mode, r, 3*opts.FileSize)
		}
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("%d files left behind, want none", len(left))
	}
	if _, err := Run(context.Background(), filepath.Join(dir, "missing"), opts, Modes[:1]); err == nil {
		t.Error("a missing directory was measured")
	}
}

func TestBoundNamesTheSlowerSide(t *testing.T) {
	res := []Result{{Mode: Modes[0], Bytes: 1 << 30, Elapsed: 1e9}, {Mode: Modes[2], Unsupported: "no"}}
	for _, tt := range []struct {
		network float64
		want    string
	}{
		{2 << 30, "the disk would bound"},
		{1 << 29, "the network would bound"},
		{0, "rate is unknown"},
	} {
		if got := Bound(res, tt.network); !strings.Contains(got, tt.want) {
			t.Errorf("Bound(network %.0f) = %q, want %q", tt.network, got, tt.want)
		}
	}
}

// TestXFSOnLoopDevice measures xfs on a loop device, where O_DIRECT and
// fallocate are supported. A loop device's "disk" is a file in the
// page cache of the file system beneath: the figures say nothing of a
// real disk, only that the pattern runs and each mode works.
func TestXFSOnLoopDevice(t *testing.T) {
	mnt := testenv.Loop{Mkfs: []string{"mkfs.xfs", "-q", "-f"}}.Mount(t)
	if !OnLoopDevice(mnt) {
		t.Errorf("%s is not seen as on a loop device", mnt)
	}
	if OnLoopDevice(t.TempDir()) {
		t.Errorf("a plain temporary directory is seen as on a loop device")
	}
	opts := Options{Files: 2, FileSize: 32 << 20, PartSize: 4 << 20, Writers: 4}
	res, err := Run(context.Background(), mnt, opts, Modes)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Unsupported != "" || r.Bytes != 64<<20 || r.BytesPerSecond() <= 0 {
			t.Errorf("xfs %s: %+v, want 64 MiB written (xfs supports O_DIRECT and fallocate)", r.Mode, r)
		}
	}
}
