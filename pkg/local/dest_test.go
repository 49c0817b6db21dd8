package local

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/s3pd/s3pd/pkg/store"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// TestDestLocates: a destination names a directory when it ends in "/"
// or is one, else the file a single object lands at; one under a file
// cannot be written, and nothing is left behind by the check.
func TestDestLocates(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	d := Dest(Options{})
	for loc, want := range map[string]bool{dir: true, filepath.Join(dir, "new") + "/": true, filepath.Join(dir, "new"): false, file: false} {
		p, err := d.Locate(loc)
		if err != nil || p.Path != loc || p.Dir != want {
			t.Errorf("Locate(%s) = %+v, %v; want the path, directory %v", loc, p, err, want)
		}
	}
	if _, err := d.Locate(filepath.Join(file, "under")); err == nil {
		t.Error("a destination under a file: no error")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("locating left %d entries, want the one file", len(entries))
	}
}

// TestDestLocks: a single object locks only its name, so two runs of
// two objects write into one directory together while a second run of
// the same object, or one over the whole directory, is refused; a copy
// from local files takes a CopySink.
func TestDestLocks(t *testing.T) {
	dir := t.TempDir()
	d := Dest(Options{})
	open := func(o store.DestOptions) (*store.Sink, error) {
		o.Root = dir
		s, err := d.Open(context.Background(), dir, o)
		if err == nil {
			t.Cleanup(func() { s.Release() })
		}
		return s, err
	}
	a, err := open(store.DestOptions{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := a.Sink.(*Sink); !ok {
		t.Errorf("a download's sink is %T, want *Sink", a.Sink)
	}
	if _, err := open(store.DestOptions{Name: "b"}); err != nil {
		t.Errorf("a second object beside the first: %v", err)
	}
	if _, err := open(store.DestOptions{Name: "a"}); err == nil {
		t.Error("the same object twice at once: no error")
	}
	if _, err := open(store.DestOptions{}); err == nil {
		t.Error("a run over the whole directory beside runs of single objects: no error")
	}

	src := t.TempDir()
	from, err := Opener(SourceOptions{})(context.Background(), src, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := d.Open(context.Background(), "", store.DestOptions{Root: filepath.Join(t.TempDir(), "copy"), From: from})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	if _, ok := c.Sink.(*CopySink); !ok {
		t.Errorf("a copy from local files got %T, want *CopySink", c.Sink)
	}
	if _, ok := c.Sink.(store.Pruner); !ok {
		t.Errorf("%T cannot prune", c.Sink)
	}
}

// TestDestOverlap: a copy onto itself, through a link, a file into its
// own directory, or a tree into itself is refused; a sibling is not.
func TestDestOverlap(t *testing.T) {
	dir := t.TempDir()
	tree := filepath.Join(dir, "tree")
	if err := os.MkdirAll(filepath.Join(tree, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tree, "f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(tree, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	d := Dest(Options{})
	for _, tt := range []struct {
		src, dst string
		want     error
	}{
		{tree, tree + "/", store.ErrSame},
		{tree, filepath.Join(dir, "link"), store.ErrSame},
		{filepath.Join(tree, "f"), tree, store.ErrSame},
		{tree, filepath.Join(tree, "sub", "new"), store.ErrInside},
		{tree, filepath.Join(dir, "tree2"), nil},
		{filepath.Join(tree, "f"), filepath.Join(tree, "g"), nil},
	} {
		if err := d.Overlap(tt.src, tt.dst); !errors.Is(err, tt.want) || (err == nil) != (tt.want == nil) {
			t.Errorf("Overlap(%s, %s) = %v, want %v", tt.src, tt.dst, err, tt.want)
		}
	}
}

// TestSourceIdentity: a file's identity changes when it does.
func TestSourceIdentity(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	var s Source
	obj := transfer.Object{Key: p, Size: 1}
	before := s.Identity(obj)
	if before == "" || s.Identity(obj) != before {
		t.Fatalf("identity %q, then %q", before, s.Identity(obj))
	}
	if err := os.WriteFile(p, []byte("ab"), 0o644); err != nil {
		t.Fatal(err)
	}
	if s.Identity(obj) == before {
		t.Error("a file that changed kept its identity")
	}
	os.Remove(p)
	if got := s.Identity(obj); got != "" {
		t.Errorf("a missing file's identity %q, want none", got)
	}
}
