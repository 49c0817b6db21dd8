package local

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/s3pd/s3pd/internal/unpriv"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// writeTree creates files (name -> content) under dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

type reported struct {
	mu   sync.Mutex
	errs map[string]error
}

func (r *reported) add(p string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.errs == nil {
		r.errs = map[string]error{}
	}
	r.errs[p] = err
}

func listNames(t *testing.T, s *Source) []string {
	t.Helper()
	var names []string
	err := s.List(context.Background(), func(o transfer.Object) error {
		names = append(names, o.Name)
		return nil
	})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	slices.Sort(names)
	return names
}

func TestSourceList(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"a": "1", "d/b": "22", "d/e/c": "333", "x/y": "4"})
	if err := os.Symlink("d", filepath.Join(dir, "dlink")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a", filepath.Join(dir, "d", "alink")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("..", filepath.Join(dir, "d", "up")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("missing", filepath.Join(dir, "broken")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		follow    bool
		want      []string
		wantRep   map[string]error
		wantCount int
	}{
		{"no follow", false, []string{"a", "d/b", "d/e/c", "x/y"},
			map[string]error{"dlink": ErrSymlink, "d/alink": ErrSymlink, "d/up": ErrSymlink, "broken": ErrSymlink}, 4},
		{"follow", true, []string{"a", "d/b", "d/e/c", "dlink/b", "dlink/e/c", "x/y"},
			// d/alink points at d/a, which does not exist; d/up loops.
			map[string]error{"d/alink": os.ErrNotExist, "dlink/alink": os.ErrNotExist, "d/up": ErrLoop, "dlink/up": ErrLoop, "broken": os.ErrNotExist}, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rep reported
			s, err := NewSource(dir, SourceOptions{FollowSymlinks: tt.follow, Report: rep.add})
			if err != nil {
				t.Fatal(err)
			}
			if got := listNames(t, s); !slices.Equal(got, tt.want) {
				t.Errorf("names: got %v, want %v", got, tt.want)
			}
			if len(rep.errs) != tt.wantCount {
				t.Errorf("reported %d entries (%v), want %d", len(rep.errs), rep.errs, tt.wantCount)
			}
			for rel, want := range tt.wantRep {
				got := rep.errs[filepath.Join(dir, rel)]
				if !errors.Is(got, want) {
					t.Errorf("report for %s: got %v, want %v", rel, got, want)
				}
			}
		})
	}
}

func TestNewSourceErrors(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"f": "x"})
	tests := []struct {
		name string
		path string
		want error
	}{
		{"missing", filepath.Join(dir, "nope"), os.ErrNotExist},
		{"special", "/dev/null", ErrSpecial},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewSource(tt.path, SourceOptions{})
			if !errors.Is(err, tt.want) {
				t.Errorf("got %v, want %v", err, tt.want)
			}
		})
	}
}

func TestNewSourceUnreadable(t *testing.T) {
	if unpriv.Rerun(t) { // root reads every file: run as nobody
		return
	}
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := NewSource(p, SourceOptions{}); !errors.Is(err, os.ErrPermission) {
		t.Errorf("unreadable: got %v, want permission denied", err)
	}
}

func TestSourceSingleAndOpen(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"f": "0123456789"})
	s, err := NewSource(filepath.Join(dir, "f"), SourceOptions{Name: "g"})
	if err != nil {
		t.Fatal(err)
	}
	var objs []transfer.Object
	s.List(context.Background(), func(o transfer.Object) error { objs = append(objs, o); return nil })
	if len(objs) != 1 || objs[0].Name != "g" || objs[0].Size != 10 {
		t.Fatalf("objects: got %+v, want one named g of 10 bytes", objs)
	}
	tests := []struct {
		off, n  int64
		want    string
		wantLen int64
	}{
		{0, -1, "0123456789", 10},
		{3, 4, "3456", 4},
		{8, 10, "89", 2},
	}
	for _, tt := range tests {
		b, err := s.Open(context.Background(), &objs[0], tt.off, tt.n)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(b)
		b.Close()
		if string(got) != tt.want || b.Off != tt.off || b.Len != tt.wantLen || b.Size != 10 {
			t.Errorf("Open(%d, %d): got %q off %d len %d size %d, want %q off %d len %d size 10",
				tt.off, tt.n, got, b.Off, b.Len, b.Size, tt.want, tt.off, tt.wantLen)
		}
	}
	os.WriteFile(filepath.Join(dir, "f"), []byte("short"), 0o644)
	if _, err := s.Open(context.Background(), &objs[0], 0, -1); !errors.Is(err, transfer.ErrModified) {
		t.Errorf("Open of a changed file: got %v, want ErrModified", err)
	}
}

// TestCopySizelessFiles: files on a file system that stores nothing
// (procfs) report size 0; they are copied with what reading them gives.
func TestCopySizelessFiles(t *testing.T) {
	want, err := os.ReadFile("/proc/version")
	if err != nil || len(want) == 0 {
		t.Skip("no /proc/version here")
	}
	if st, _ := os.Stat("/proc/version"); st.Size() != 0 {
		t.Skip("/proc/version reports its size here")
	}
	for _, kernel := range []bool{true, false} {
		dst := t.TempDir()
		s, err := NewSource("/proc/version", SourceOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sk, err := NewSink(dst, Options{})
		if err != nil {
			t.Fatal(err)
		}
		cs := NewCopySink(sk)
		cs.noKernel.Store(!kernel)
		eng, err := transfer.New([]transfer.Lane{{Name: "local", Source: s}}, cs, transfer.Options{PartSize: 16, Threshold: 64})
		if err != nil {
			t.Fatal(err)
		}
		sum, err := eng.Run(context.Background())
		sk.Close()
		if err != nil || sum.Objects != 1 {
			t.Fatalf("Run: %v, %+v", err, sum)
		}
		got, _ := os.ReadFile(filepath.Join(dst, "version"))
		if string(got) != string(want) {
			t.Errorf("copy of /proc/version: %q, want %q", got, want)
		}
	}
}
