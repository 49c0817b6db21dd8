package local

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/s3pd/s3pd/pkg/transfer"
	"github.com/s3pd/s3pd/pkg/transfer/transfertest"
)

// directRun lands src's objects in dir through a sink with opts, and
// returns the sink's direct I/O status and its warnings.
func directRun(t *testing.T, ctx context.Context, src *transfertest.Source, dir string, opts Options, eopts transfer.Options) (DirectStatus, []string, transfer.Summary) {
	t.Helper()
	var mu sync.Mutex
	var warned []string
	opts.Warn = func(msg string) { mu.Lock(); warned = append(warned, msg); mu.Unlock() }
	opts.ResumeMin = eopts.Threshold
	s, err := NewSink(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	eopts.Verify = transfer.VerifyFull
	e, err := transfer.New([]transfer.Lane{{Name: "mem", Source: src}}, s, eopts)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := e.Run(ctx)
	if err != nil && ctx.Err() == nil {
		t.Fatal(err)
	}
	return s.DirectIO(), warned, sum
}

// cachedPages counts the pages of a file in the page cache (mincore).
func cachedPages(t *testing.T, path string) (cached, pages int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	if st.Size() == 0 {
		return 0, 0
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	vec := make([]byte, (len(m)+os.Getpagesize()-1)/os.Getpagesize())
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatal(errno)
	}
	for _, v := range vec {
		cached += int(v & 1)
	}
	return cached, len(vec)
}

// wantLanded fails unless every object of src is at dir with its bytes.
func wantLanded(t *testing.T, src *transfertest.Source, dir string, keys ...string) {
	t.Helper()
	for _, k := range keys {
		got, err := os.ReadFile(filepath.Join(dir, k))
		if err != nil || !bytes.Equal(got, src.Data(k)) {
			t.Errorf("%s: %d bytes (%v), want the object's %d", k, len(got), err, len(src.Data(k)))
		}
	}
}

// Objects of every size land byte for byte with direct I/O, whether the
// parts start on a block or not, and the sink says direct I/O was on.
func TestDirectLandsExactBytes(t *testing.T) {
	for _, partSize := range []int64{64 << 10, 5001} {
		src := transfertest.NewSource()
		keys := []string{"one", "block-1", "block", "block+1", "parts-odd", "parts"}
		for i, n := range []int{1, 4095, 4096, 4097, 3*65536 + 123, 1 << 20} {
			src.Add(keys[i], transfertest.Data(keys[i], n))
		}
		dir := t.TempDir()
		st, warned, sum := directRun(t, context.Background(), src, dir, Options{DirectIO: DirectOn, StageSize: 64 << 10},
			transfer.Options{PartSize: partSize, Threshold: 8192})
		if sum.Failed != 0 || sum.Objects != int64(len(keys)) {
			t.Fatalf("part %d: %d objects, %d failed", partSize, sum.Objects, sum.Failed)
		}
		if st.State != DirectStateOn || len(warned) != 0 {
			t.Errorf("part %d: direct I/O %+v, warnings %q; want on and none", partSize, st, warned)
		}
		wantLanded(t, src, dir, keys...)
	}
}

// With direct I/O the landed file leaves (almost) nothing in the page
// cache; written through the cache, nearly all of it stays.
func TestDirectLeavesThePageCacheAlone(t *testing.T) {
	for _, tc := range []struct {
		mode      DirectMode
		wantBelow float64
		wantAbove float64
	}{{DirectOn, 0.05, -1}, {DirectOff, 2, 0.9}} {
		src := transfertest.NewSource()
		src.Add("big", transfertest.Data("big", 8<<20+123))
		dir := t.TempDir()
		directRun(t, context.Background(), src, dir, Options{DirectIO: tc.mode, StageSize: 1 << 20},
			transfer.Options{PartSize: 1 << 20, Threshold: 1 << 20})
		cached, pages := cachedPages(t, filepath.Join(dir, "big")) // before reading it
		wantLanded(t, src, dir, "big")
		share := float64(cached) / float64(pages)
		if share >= tc.wantBelow || share <= tc.wantAbove {
			t.Errorf("direct %v: %d of %d pages cached (%.0f%%), want below %.0f%% and above %.0f%%",
				tc.mode, cached, pages, 100*share, 100*tc.wantBelow, 100*tc.wantAbove)
		}
	}
}

// A file system that refuses O_DIRECT (injected) makes the sink write
// through the page cache, say so once, and report the fallback.
func TestDirectRefusedFallsBackOnce(t *testing.T) {
	src := transfertest.NewSource()
	for _, k := range []string{"a", "b", "c"} {
		src.Add(k, transfertest.Data(k, 100<<10+3))
	}
	dir := t.TempDir()
	st, warned, sum := directRun(t, context.Background(), src, dir, Options{DirectIO: DirectOn, RefuseDirect: true},
		transfer.Options{PartSize: 32 << 10, Threshold: 32 << 10})
	if sum.Failed != 0 {
		t.Fatalf("%d failed", sum.Failed)
	}
	if st.State != DirectStateFallback || !strings.Contains(st.Reason, "O_DIRECT") {
		t.Errorf("direct I/O %+v, want fallback with the reason", st)
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "page cache") {
		t.Errorf("warnings %q, want one that says it writes through the page cache", warned)
	}
	wantLanded(t, src, dir, "a", "b", "c")
}

// auto leaves small objects and tmpfs to the page cache, and says why.
func TestDirectAuto(t *testing.T) {
	src := transfertest.NewSource()
	src.Add("small", transfertest.Data("small", 1<<20))
	st, _, _ := directRun(t, context.Background(), src, t.TempDir(), Options{DirectIO: DirectAuto},
		transfer.Options{PartSize: 256 << 10, Threshold: 256 << 10})
	if st.State != DirectStateOff || !strings.Contains(st.Reason, "64 MiB") {
		t.Errorf("auto, small objects: %+v, want off because none reaches 64 MiB", st)
	}
	shm, err := os.MkdirTemp("/dev/shm", "s3pd-direct-")
	var fs unix.Statfs_t
	if err != nil || unix.Statfs(shm, &fs) != nil || fs.Type != unix.TMPFS_MAGIC {
		os.RemoveAll(shm)
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI: no tmpfs at /dev/shm (%v)", err)
		}
		t.Skipf("no tmpfs at /dev/shm (%v)", err)
	}
	defer os.RemoveAll(shm)
	st, _, _ = directRun(t, context.Background(), src, shm, Options{DirectIO: DirectAuto},
		transfer.Options{PartSize: 256 << 10, Threshold: 256 << 10})
	if st.State != DirectStateOff || !strings.Contains(st.Reason, "tmpfs") {
		t.Errorf("auto on tmpfs: %+v, want off because of tmpfs", st)
	}
}

// A run interrupted with direct I/O on resumes: the prefix it wrote of a
// part is journaled, read back through the aligned buffer, checked, and
// the object lands byte for byte.
func TestDirectResumesAnInterruptedPart(t *testing.T) {
	const part = 256 << 10
	src := transfertest.NewSource()
	src.Add("k", transfertest.Data("k", 4*part+777))
	o := src.Object("k")
	o.ChecksumAlgorithm = "CRC64NVME"
	o.Checksums = map[string]string{"CRC64NVME": transfertest.CRC64NVME(src.Data("k"))}
	src.Put(o, src.Data("k"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	src.Break = func(key string, off int64, attempt int) int64 {
		if off == 2*part {
			cancel()
			return 100001 // not on a block
		}
		return -1
	}
	src.Fault = func(key string, off, n int64, attempt int) error {
		if off > 2*part {
			return context.Canceled
		}
		return nil
	}
	dir := t.TempDir()
	opts := Options{DirectIO: DirectOn, StageSize: 64 << 10}
	eopts := transfer.Options{PartSize: part, Threshold: part, Threads: 1}
	directRun(t, ctx, src, dir, opts, eopts)
	src.Break, src.Fault = nil, nil
	st, _, sum := directRun(t, context.Background(), src, dir, opts, eopts)
	if sum.Objects != 1 || st.State != DirectStateOn {
		t.Fatalf("resumed run: %+v, direct %+v", sum, st)
	}
	if r := sum.Bytes; r != 2*part+777-100001 {
		t.Errorf("the resumed run fetched %d bytes, want %d", r, 2*part+777-100001)
	}
	wantLanded(t, src, dir, "k")
}

// Staging a range through a direct file allocates nothing once the
// pool holds a buffer: no allocation per chunk, nor per range.
func TestDirectStageAllocatesNothing(t *testing.T) {
	s, err := NewSink(t.TempDir(), Options{DirectIO: DirectOn, StageSize: 64 << 10, ResumeMin: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const size = 1<<20 + 100
	f, err := s.Create(context.Background(), transfer.Object{Name: "k", Key: "k", Size: size})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Abort()
	st, ok := f.(transfer.Stager)
	if !ok {
		t.Fatalf("a file with direct I/O on is %T, not a Stager", f)
	}
	write := func() {
		w, err := st.Stage(7, size-7)
		if err != nil {
			t.Fatal(err)
		}
		for left := size - 7; left > 0; {
			k := min(len(w.Next()), 16<<10, left)
			if err := w.Wrote(k); err != nil {
				t.Fatal(err)
			}
			left -= k
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if n := testing.AllocsPerRun(20, write); n != 0 {
		t.Errorf("%.1f allocations per staged range, want 0", n)
	}
}

// A direct write the file system refuses mid-run (EINVAL: here a buffer
// off its alignment) lands through the page cache instead, and the sink
// falls back for the rest of the run, saying so once.
func TestDirectRefusedMidRunFallsBack(t *testing.T) {
	var warned []string
	dir := t.TempDir()
	s, err := NewSink(dir, Options{DirectIO: DirectOn, StageSize: 64 << 10, Warn: func(m string) { warned = append(warned, m) }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	obj := transfer.Object{Name: "k", Key: "k", Size: 2 * s.direct.align}
	f, err := s.Create(context.Background(), obj)
	if err != nil {
		t.Fatal(err)
	}
	df := f.(*directFile)
	buf := alignedBuffer(int(3*s.direct.align), s.direct.memAlign)
	for i := range buf {
		buf[i] = byte(i % 251)
	}
	for i, off := range []int64{0, s.direct.align} {
		// One byte past an aligned address: O_DIRECT refuses it.
		if err := df.writeDirect(buf[1+int(off):1+int(off+s.direct.align)], off); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "k"))
	if !bytes.Equal(got, buf[1:1+2*s.direct.align]) {
		t.Errorf("the file holds other bytes than were written")
	}
	if st := s.DirectIO(); st.State != DirectStateFallback || !strings.Contains(st.Reason, "invalid argument") {
		t.Errorf("direct I/O %+v, want fallback with the refusal", st)
	}
	if len(warned) != 1 {
		t.Errorf("warnings %q, want one", warned)
	}
	if s.wantsDirect(obj) {
		t.Errorf("after the refusal the next object would still be written with O_DIRECT")
	}
}
