package local

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"github.com/s3pd/s3pd/internal/unpriv"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// randomFile writes n pseudo-random bytes to p with mode and mtime.
func randomFile(t testing.TB, p string, n int, mode fs.FileMode, mtime time.Time) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(uint64(n), uint64(len(p))))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, mtime, mtime); err != nil {
		t.Fatal(err)
	}
}

func sum(t testing.TB, p string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// copyTree runs the engine from src to dst with a CopySink.
func copyTree(t *testing.T, src, dst string, sopts SourceOptions, overwrite bool, kernel bool, partSize int64) transfer.Summary {
	t.Helper()
	s, err := NewSource(src, sopts)
	if err != nil {
		t.Fatal(err)
	}
	sk, err := NewSink(dst, Options{Overwrite: overwrite})
	if err != nil {
		t.Fatal(err)
	}
	defer sk.Close()
	cs := NewCopySink(sk)
	cs.noKernel.Store(!kernel)
	eng, err := transfer.New([]transfer.Lane{{Name: "local", Source: s}}, cs,
		transfer.Options{Workers: 4, Threads: 4, PartSize: partSize, Threshold: partSize})
	if err != nil {
		t.Fatal(err)
	}
	got, err := eng.Run(context.Background())
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if kernel && got.Bytes > 0 && cs.noKernel.Load() {
		t.Errorf("copy_file_range was refused on %s: the kernel path went untested", dst)
	}
	return got
}

func TestCopyTree(t *testing.T) {
	const part = 64 << 10
	mtime := time.Date(2020, 1, 2, 3, 4, 5, 600, time.UTC)
	files := []struct {
		name string
		size int
		mode fs.FileMode
	}{
		{"empty", 0, 0o600},
		{"one", 1, 0o644},
		{"part", part, 0o755},
		{"part+1", part + 1, 0o640},
		{"d/e/big", 5*part + 123, 0o444},
		{"d/x", 1000, 0o700},
	}
	for _, kernel := range []bool{true, false} {
		name := "pread"
		if kernel {
			name = "copy_file_range"
		}
		t.Run(name, func(t *testing.T) {
			src, dst := t.TempDir(), filepath.Join(t.TempDir(), "out")
			for i, f := range files {
				randomFile(t, filepath.Join(src, f.name), f.size, f.mode, mtime.Add(time.Duration(i)*time.Second))
			}
			if err := os.Symlink("one", filepath.Join(src, "link")); err != nil {
				t.Fatal(err)
			}
			var rep reported
			got := copyTree(t, src, dst, SourceOptions{Report: rep.add}, false, kernel, part)
			if got.Objects != int64(len(files)) || got.Failed != 0 {
				t.Fatalf("summary: got %d objects, %d failed, want %d, 0", got.Objects, got.Failed, len(files))
			}
			for i, f := range files {
				sp, dp := filepath.Join(src, f.name), filepath.Join(dst, f.name)
				if sum(t, sp) != sum(t, dp) {
					t.Errorf("%s: content differs", f.name)
				}
				st, err := os.Stat(dp)
				if err != nil {
					t.Fatal(err)
				}
				if st.Mode().Perm() != f.mode {
					t.Errorf("%s: mode got %v, want %v", f.name, st.Mode().Perm(), f.mode)
				}
				if want := mtime.Add(time.Duration(i) * time.Second); !st.ModTime().Equal(want) {
					t.Errorf("%s: mtime got %v, want %v", f.name, st.ModTime(), want)
				}
			}
			if _, err := os.Lstat(filepath.Join(dst, "link")); !os.IsNotExist(err) {
				t.Errorf("symlink copied: got %v, want not exist", err)
			}
			if len(rep.errs) != 1 {
				t.Errorf("reports: got %v, want the symlink", rep.errs)
			}
			assertNoPartials(t, dst)

			// A second run skips everything; --overwrite copies again.
			if again := copyTree(t, src, dst, SourceOptions{}, false, kernel, part); again.Skipped != int64(len(files)) || again.Objects != 0 {
				t.Errorf("rerun: got %d skipped, %d copied, want %d, 0", again.Skipped, again.Objects, len(files))
			}
			if over := copyTree(t, src, dst, SourceOptions{}, true, kernel, part); over.Objects != int64(len(files)) {
				t.Errorf("overwrite: got %d copied, want %d", over.Objects, len(files))
			}
		})
	}
}

func assertNoPartials(t *testing.T, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && (strings.HasPrefix(d.Name(), ".s3pd-") || d.Name() == WorkDir) {
			t.Errorf("leftover %s", p)
		}
		return nil
	})
}

func TestCopyUnreadable(t *testing.T) {
	if unpriv.Rerun(t) { // root reads every file: run as nobody
		return
	}
	src, dst := t.TempDir(), t.TempDir()
	randomFile(t, filepath.Join(src, "ok"), 10, 0o644, time.Now())
	randomFile(t, filepath.Join(src, "secret"), 10, 0, time.Now())
	got := copyTree(t, src, dst, SourceOptions{}, false, true, 1<<20)
	if got.Objects != 1 || got.Failed != 1 {
		t.Errorf("got %d copied, %d failed, want 1, 1", got.Objects, got.Failed)
	}
	if _, err := os.Stat(filepath.Join(dst, "secret")); !os.IsNotExist(err) {
		t.Errorf("unreadable file: got %v at the final name, want nothing", err)
	}
	assertNoPartials(t, dst)
}

// TestWritePartStream covers bodies that are not local files (an S3
// download through the copy sink): they are streamed.
func TestWritePartStream(t *testing.T) {
	sk, err := NewSink(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sk.Close()
	cs := NewCopySink(sk)
	data := bytes.Repeat([]byte("abcdefgh"), 300_000)
	f, err := cs.Create(context.Background(), transfer.Object{Key: "/nonexistent", Name: "s", Size: int64(len(data))})
	if err != nil {
		t.Fatal(err)
	}
	pw := f.(transfer.PartWriter)
	var moved int64
	half := int64(len(data) / 2)
	for _, off := range []int64{half, 0} {
		end := min(off+half, int64(len(data)))
		body := &transfer.Body{ReadCloser: io.NopCloser(bytes.NewReader(data[off:end])), Off: off, Len: end - off}
		n, err := pw.WritePart(context.Background(), off, end-off, body, func(k int64) { moved += k })
		if err != nil || n != end-off {
			t.Fatalf("WritePart(%d): got %d, %v, want %d, nil", off, n, err, end-off)
		}
	}
	short := &transfer.Body{ReadCloser: io.NopCloser(bytes.NewReader(data[:10])), Off: 0, Len: 20}
	if _, err := pw.WritePart(context.Background(), 0, 20, short, func(k int64) { moved += k }); !transfer.Retriable(err) {
		t.Errorf("short body: got %v, want a retriable error", err)
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(sk.dir, "s"))
	if !bytes.Equal(got, data) || moved != int64(len(data))+10 {
		t.Errorf("got %d bytes (equal %v), progress %d, want %d bytes equal, progress %d", len(got), bytes.Equal(got, data), moved, len(data), len(data)+10)
	}
}

// TestCopyKeepsSparseFilesSparse: holes in a source are not written, in
// one part or in many, through the kernel or a buffer; the copy reads the
// same.
func TestCopyKeepsSparseFilesSparse(t *testing.T) {
	const size = 8 << 20
	src := t.TempDir()
	p := filepath.Join(src, "sparse")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt(bytes.Repeat([]byte("a"), 4096), 0)
	f.WriteAt(bytes.Repeat([]byte("b"), 4096), 6<<20)
	f.Truncate(size)
	f.Close()
	var st syscall.Stat_t
	if syscall.Stat(p, &st); st.Blocks*512 >= size/2 {
		t.Skip("this file system does not keep holes")
	}
	for _, tt := range []struct {
		name   string
		part   int64
		kernel bool
	}{{"one part", 16 << 20, true}, {"parts", 1 << 20, true}, {"parts, buffered", 1 << 20, false}} {
		t.Run(tt.name, func(t *testing.T) {
			dst := t.TempDir()
			if got := copyTree(t, src, dst, SourceOptions{}, false, tt.kernel, tt.part); got.Objects != 1 {
				t.Fatalf("copied %d objects", got.Objects)
			}
			if sum(t, p) != sum(t, filepath.Join(dst, "sparse")) {
				t.Fatal("the copy reads differently")
			}
			var dt syscall.Stat_t
			syscall.Stat(filepath.Join(dst, "sparse"), &dt)
			if dt.Size != size || dt.Blocks*512 > 1<<20 {
				t.Errorf("copy: size %d, %d bytes allocated; want %d and at most 1 MiB", dt.Size, dt.Blocks*512, size)
			}
		})
	}
}

// TestDenseAndSegment: a file written through is dense, so its parts skip
// the hole search; one with a hole in the middle or at its end is not,
// and its segments are found where they are.
func TestDenseAndSegment(t *testing.T) {
	dir := t.TempDir()
	full := filepath.Join(dir, "full")
	randomFile(t, full, 3<<20, 0o644, time.Now())
	holey := filepath.Join(dir, "holey")
	f, err := os.Create(holey)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.WriteAt(bytes.Repeat([]byte("a"), 1<<20), 0)
	f.WriteAt(bytes.Repeat([]byte("b"), 1<<20), 4<<20)
	f.Truncate(8 << 20) // and a trailing hole
	fd := int(f.Fd())
	var st syscall.Stat_t
	if syscall.Fstat(fd, &st); st.Blocks*512 >= 8<<20 {
		t.Skip("this file system does not keep holes")
	}
	g, err := os.Open(full)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if !dense(int(g.Fd())) {
		t.Errorf("dense(%s) = false for a file written through", full)
	}
	if dense(fd) {
		t.Errorf("dense(%s) = true for a file with holes", holey)
	}
	for _, tt := range []struct{ pos, end, data, hole int64 }{
		{0, 8 << 20, 0, 1 << 20},
		{512 << 10, 8 << 20, 512 << 10, 1 << 20},
		{1 << 20, 8 << 20, 4 << 20, 5 << 20},
		{4 << 20, 4<<20 + 4096, 4 << 20, 4<<20 + 4096},
		{5 << 20, 8 << 20, 8 << 20, 8 << 20},
		{2 << 20, 3 << 20, 3 << 20, 3 << 20},
	} {
		if data, hole := segment(fd, tt.pos, tt.end); data != tt.data || hole != tt.hole {
			t.Errorf("segment(%d, %d) = [%d, %d), want [%d, %d)", tt.pos, tt.end, data, hole, tt.data, tt.hole)
		}
	}
}

// TestKernelCopyOneAtATime: parts copied into one file through the kernel
// take turns (the file system would serialise them on the inode's lock,
// spinning); a part waiting for its turn sleeps, gives up when its
// context ends, and another file's parts do not wait at all.
func TestKernelCopyOneAtATime(t *testing.T) {
	const part = 1 << 20
	src := t.TempDir()
	p := filepath.Join(src, "f")
	randomFile(t, p, 2*part, 0o644, time.Now())
	sopen := func(t *testing.T, s *Source, obj transfer.Object, off int64) *transfer.Body {
		b, err := s.Open(context.Background(), &obj, off, part)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	}
	synctest.Test(t, func(t *testing.T) {
		s, err := NewSource(src, SourceOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sk, err := NewSink(t.TempDir(), Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sk.Close() }) // after the files' Abort
		cs := NewCopySink(sk)
		obj := transfer.Object{Key: p, Name: "f", Size: 2 * part}
		create := func(name string) transfer.PartWriter {
			o := obj
			o.Name = name
			f, err := cs.Create(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Abort() })
			return f.(transfer.PartWriter)
		}
		f, other := create("f"), create("g")

		// The first part holds its turn while its progress is held.
		hold, held := make(chan struct{}), make(chan struct{})
		firstDone := make(chan error)
		go func() {
			_, err := f.WritePart(context.Background(), 0, part, sopen(t, s, obj, 0), func(int64) {
				close(held)
				<-hold
			})
			firstDone <- err
		}()
		<-held
		var moved atomic.Int64
		second := make(chan error)
		go func() {
			_, err := f.WritePart(context.Background(), part, part, sopen(t, s, obj, part), func(k int64) { moved.Add(k) })
			second <- err
		}()
		ctx, cancel := context.WithCancel(context.Background())
		third := make(chan error)
		go func() {
			_, err := f.WritePart(ctx, part, part, sopen(t, s, obj, part), func(int64) {})
			third <- err
		}()
		synctest.Wait()
		if got := moved.Load(); got != 0 {
			t.Errorf("second part moved %d bytes while the first held its turn, want 0", got)
		}
		// Another file does not wait for this one's turn.
		if n, err := other.WritePart(context.Background(), 0, part, sopen(t, s, obj, 0), func(int64) {}); err != nil || n != part {
			t.Errorf("another file's part: got %d, %v, want %d, nil", n, err, part)
		}
		cancel()
		if err := <-third; !errors.Is(err, context.Canceled) {
			t.Errorf("waiting part, context cancelled: got %v, want context.Canceled", err)
		}
		close(hold)
		if err := <-firstDone; err != nil {
			t.Fatal(err)
		}
		if err := <-second; err != nil || moved.Load() != part {
			t.Fatalf("second part: got %v after %d bytes, want nil after %d", err, moved.Load(), part)
		}
		if cs.noKernel.Load() {
			t.Fatalf("copy_file_range was refused on %s: the kernel path went untested", sk.dir)
		}
	})
}
