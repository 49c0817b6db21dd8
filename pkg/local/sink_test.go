package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/s3pd/s3pd/pkg/transfer"
)

func newTestSink(t *testing.T, opts Options) (*Sink, string) {
	t.Helper()
	dir := t.TempDir()
	s, err := NewSink(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, dir
}

func write(t *testing.T, s *Sink, obj transfer.Object, data []byte) error {
	t.Helper()
	if err := s.Check(obj); err != nil {
		return err
	}
	f, err := s.Create(context.Background(), obj)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Commit(); err != nil {
		f.Abort()
		return err
	}
	return nil
}

func TestSinkWritesAtFinalNameOnlyWhenWhole(t *testing.T) {
	s, dir := newTestSink(t, Options{})
	obj := transfer.Object{Key: "p/a/b", Name: "a/b", Size: 5, ETag: `"e1"`}
	f, err := s.Create(context.Background(), obj)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("hello"), 0)
	if _, err := os.Stat(filepath.Join(dir, "a/b")); !os.IsNotExist(err) {
		t.Fatalf("file at final name before commit: %v", err)
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "a/b"))
	if err != nil || string(got) != "hello" {
		t.Fatalf("got %q, %v; want hello", got, err)
	}
	left, _ := filepath.Glob(filepath.Join(dir, WorkDir, "*.*"))
	if len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func TestSinkSkipsUnchangedFiles(t *testing.T) {
	mtime := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	obj := transfer.Object{Key: "k", Name: "k", Size: 3, ETag: `"e1"`, ModTime: mtime}
	tests := []struct {
		name   string
		opts   Options
		change func(o *transfer.Object)
		skip   bool
	}{
		{"unchanged", Options{}, func(*transfer.Object) {}, true},
		{"new etag and mtime", Options{}, func(o *transfer.Object) { o.ETag = `"e2"`; o.ModTime = mtime.Add(time.Hour) }, false},
		{"new size", Options{}, func(o *transfer.Object) { o.Size = 4 }, false},
		{"overwrite", Options{Overwrite: true}, func(*transfer.Object) {}, false},
		{"no-clobber changed", Options{NoClobber: true}, func(o *transfer.Object) { o.Size = 4 }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			first, dir := newTestSink(t, tt.opts)
			if err := write(t, first, obj, []byte("abc")); err != nil {
				t.Fatal(err)
			}
			// The next run opens the destination again.
			first.Close()
			s, err := NewSink(dir, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			o := obj
			tt.change(&o)
			err = s.Check(o)
			var skip *transfer.SkipError
			if got := errors.As(err, &skip); got != tt.skip {
				t.Fatalf("Check: %v, want skip=%v", err, tt.skip)
			}
		})
	}
}

// TestSinkEmptyRootLooksForNothing: a sink opened on an empty directory
// skips nothing and stats nothing, so a file that appears after it opened
// is not seen by Check (it is replaced by the rename), unless --no-clobber
// asks Check to look.
func TestSinkEmptyRootLooksForNothing(t *testing.T) {
	mtime := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	obj := transfer.Object{Key: "k", Name: "k", Size: 3, ModTime: mtime}
	for _, tt := range []struct {
		name string
		opts Options
		skip bool
	}{
		{"default", Options{}, false},
		{"no-clobber", Options{NoClobber: true}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, dir := newTestSink(t, tt.opts)
			if !s.empty {
				t.Fatalf("sink on a new directory: empty = false")
			}
			p := filepath.Join(dir, "k")
			if err := os.WriteFile(p, []byte("abc"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(p, mtime, mtime); err != nil {
				t.Fatal(err)
			}
			var skip *transfer.SkipError
			if err := s.Check(obj); errors.As(err, &skip) != tt.skip {
				t.Errorf("Check of a file made after the sink opened: %v, want skip=%v", err, tt.skip)
			}
			s.Close()
			again, err := NewSink(dir, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer again.Close()
			if err := again.Check(obj); again.empty || !errors.As(err, &skip) {
				t.Errorf("a sink opened on it afterwards: empty %v, Check %v; want false and a skip", again.empty, err)
			}
		})
	}
}

func TestSinkNoClobberNeverReplaces(t *testing.T) {
	s, dir := newTestSink(t, Options{NoClobber: true})
	obj := transfer.Object{Key: "k", Name: "k", Size: 3}
	f, err := s.Create(context.Background(), obj)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("new"), 0)
	// The file appears during the run.
	os.WriteFile(filepath.Join(dir, "k"), []byte("old"), 0o644)
	err = f.Commit()
	var skip *transfer.SkipError
	if !errors.As(err, &skip) {
		t.Fatalf("Commit: %v, want a skip", err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "k")); string(got) != "old" {
		t.Fatalf("existing file replaced: %q", got)
	}
}

func TestSinkConflicts(t *testing.T) {
	for _, order := range [][]string{{"a", "a/b"}, {"a/b", "a"}} {
		t.Run(strings.Join(order, " then "), func(t *testing.T) {
			s, _ := newTestSink(t, Options{})
			if err := write(t, s, transfer.Object{Key: order[0], Name: order[0], Size: 1}, []byte("1")); err != nil {
				t.Fatal(err)
			}
			err := write(t, s, transfer.Object{Key: order[1], Name: order[1], Size: 1}, []byte("2"))
			if err == nil || !strings.Contains(err.Error(), "conflict") {
				t.Fatalf("second write: %v, want a conflict", err)
			}
			s2, dir := newTestSink(t, Options{ConflictSuffix: ".s3pd-object"})
			for _, k := range order {
				if err := write(t, s2, transfer.Object{Key: k, Name: k, Size: 1}, []byte(k[len(k)-1:])); err != nil {
					t.Fatalf("write %s: %v", k, err)
				}
			}
			if got, _ := os.ReadFile(filepath.Join(dir, "a.s3pd-object")); string(got) != "a" {
				t.Errorf("object a at a.s3pd-object = %q, want a", got)
			}
			if got, _ := os.ReadFile(filepath.Join(dir, "a/b")); string(got) != "b" {
				t.Errorf("a/b = %q, want b", got)
			}
		})
	}
}

func TestSinkRefusesSymlinkEscape(t *testing.T) {
	s, dir := newTestSink(t, Options{})
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	err := write(t, s, transfer.Object{Key: "link/x", Name: "link/x", Size: 1}, []byte("x"))
	if err == nil {
		t.Fatal("write through a symlink out of the root succeeded")
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Fatalf("files written outside the root: %v", entries)
	}
}

func TestSinkResumesJournaledParts(t *testing.T) {
	s, dir := newTestSink(t, Options{})
	obj := transfer.Object{Key: "k", Name: "k", Size: 30, ETag: `"v1"`}
	f, err := s.Create(context.Background(), obj)
	if err != nil {
		t.Fatal(err)
	}
	j := f.(transfer.Journal)
	f.WriteAt(bytes.Repeat([]byte("a"), 10), 0)
	f.WriteAt(bytes.Repeat([]byte("c"), 10), 20)
	f.WriteAt(bytes.Repeat([]byte("b"), 4), 10)
	j.PartDone(0, 10, "CRC32C=1a")
	j.PartDone(20, 10, "")
	j.PartDone(10, 4, "CRC32C=2b") // a part interrupted 4 bytes in
	if _, err := j.Suspend(); err != nil {
		t.Fatal(err)
	}
	// The same version resumes with both parts done and the third begun.
	f2, err := s.Create(context.Background(), obj)
	if err != nil {
		t.Fatal(err)
	}
	j2 := f2.(transfer.Journal)
	for _, p := range []struct {
		off, have int64
		sum       string
	}{{0, 10, "CRC32C=1a"}, {10, 4, "CRC32C=2b"}, {20, 10, ""}} {
		if have, sum := j2.Completed(p.off, 10); have != p.have || sum != p.sum {
			t.Errorf("Completed(%d) = %d, %q, want %d, %q", p.off, have, sum, p.have, p.sum)
		}
	}
	// The begun part, finished and journaled whole, replaces its prefix.
	f2.WriteAt(bytes.Repeat([]byte("b"), 6), 14)
	j2.PartDone(10, 10, "CRC32C=3c")
	if _, err := j2.Suspend(); err != nil {
		t.Fatal(err)
	}
	f2, err = s.Create(context.Background(), obj)
	if err != nil {
		t.Fatal(err)
	}
	if have, sum := f2.(transfer.Journal).Completed(10, 10); have != 10 || sum != "CRC32C=3c" {
		t.Errorf("Completed(10) after the part was finished = %d, %q, want 10, CRC32C=3c", have, sum)
	}
	if err := f2.Commit(); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "k"))
	if want := strings.Repeat("a", 10) + strings.Repeat("b", 10) + strings.Repeat("c", 10); string(got) != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, WorkDir, "*.*")); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}

	// A new version starts over.
	f3, _ := s.Create(context.Background(), obj)
	f3.(transfer.Journal).PartDone(0, 10, "")
	f3.(transfer.Journal).Suspend()
	obj.ETag = `"v2"`
	f4, _ := s.Create(context.Background(), obj)
	if have, _ := f4.(transfer.Journal).Completed(0, 10); have != 0 {
		t.Errorf("a changed object resumed from the old version's parts")
	}
	f4.Abort()
}

func TestSinkDirectoryMarkers(t *testing.T) {
	s, dir := newTestSink(t, Options{})
	err := s.Check(transfer.Object{Key: "p/d/", Name: "d/", Size: 0})
	var skip *transfer.SkipError
	if !errors.As(err, &skip) {
		t.Fatalf("Check(marker) = %v, want a skip", err)
	}
	if st, err := os.Stat(filepath.Join(dir, "d")); err != nil || !st.IsDir() {
		t.Fatalf("marker did not create its directory: %v", err)
	}
}

// TestSinkConflictCopiesNeverMeetKeys: with a ConflictSuffix no key may
// end in it (so the copy of an object that is also a prefix never takes
// a real key's name), and Prune keeps the copy while its object is
// listed.
func TestSinkConflictCopiesNeverMeetKeys(t *testing.T) {
	s, dir := newTestSink(t, Options{ConflictSuffix: ".obj"})
	for _, name := range []string{"a.obj", "d/x.obj", "d.obj/x"} {
		err := write(t, s, transfer.Object{Key: name, Name: name, Size: 1}, []byte("k"))
		if !errors.Is(err, ErrConflictName) || !strings.Contains(err.Error(), "--conflict-suffix") {
			t.Errorf("%s: %v, want ErrConflictName", name, err)
		}
	}
	for _, k := range []string{"a", "a/b", "c"} {
		if err := write(t, s, transfer.Object{Key: k, Name: k, Size: 1}, []byte(k[:1])); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
	}
	listed := map[string]bool{"a": true, "a/b": true, "c": true}
	var removed []string
	prune := func() {
		removed = nil
		err := s.Prune(context.Background(), func(n string) bool { return !listed[n] }, false, func(n string, _ int64) { removed = append(removed, n) })
		if err != nil {
			t.Fatal(err)
		}
	}
	prune()
	if len(removed) != 0 {
		t.Errorf("Prune removed %v while every object is listed", removed)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "a.obj")); string(got) != "a" {
		t.Errorf("a.obj = %q, want the copy of a", got)
	}
	delete(listed, "a")
	prune()
	if fmt.Sprint(removed) != "[a.obj]" {
		t.Errorf("Prune removed %v once a is gone, want [a.obj]", removed)
	}
}

// TestPruneLeavesWorkFoldersAtAnyDepth: a folder below DEST may be the
// DEST of another run, live or interrupted: Prune never touches its work
// folder (lock, partial files, journals), at any depth.
func TestPruneLeavesWorkFoldersAtAnyDepth(t *testing.T) {
	s, dir := newTestSink(t, Options{})
	keep := []string{"sub/" + WorkDir + "/lock", "sub/" + WorkDir + "/0123456789abcdef01234567.partial", "a/b/" + WorkDir + "/x.journal"}
	for _, name := range append([]string{"stale", "sub/done"}, keep...) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var removed []string
	if err := s.Prune(context.Background(), func(string) bool { return true }, false, func(n string, _ int64) { removed = append(removed, n) }); err != nil {
		t.Fatal(err)
	}
	sort.Strings(removed)
	if fmt.Sprint(removed) != "[stale sub/done]" {
		t.Errorf("Prune removed %v, want [stale sub/done]", removed)
	}
	for _, name := range keep {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
