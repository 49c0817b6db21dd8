package local

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/s3pd/s3pd/pkg/store"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// TestOpenerOpensFilesAndTrees: a file is a single object named as the
// job says, a directory lists its files by their relative names, a link
// is reported and skipped unless followed, and a missing path or a
// version is an error.
func TestOpenerOpensFilesAndTrees(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"a/1", "a/b/2"} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(dir, "a/1"), filepath.Join(dir, "a/link")); err != nil {
		t.Fatal(err)
	}
	var reported []string
	open := Opener(SourceOptions{Report: func(p string, err error) {
		if errors.Is(err, ErrSymlink) {
			reported = append(reported, filepath.Base(p))
		}
	}})
	names := func(o *store.Opened) []string {
		var out []string
		err := o.Source.List(context.Background(), func(obj transfer.Object) error { out = append(out, obj.Name); return nil })
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(out)
		return out
	}
	file, err := open(context.Background(), filepath.Join(dir, "a/1"), store.Options{Name: func(key string) string { return "named" }})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(file); !file.Single || len(file.Lanes) != 1 || !slices.Equal(got, []string{"named"}) {
		t.Errorf("a file: single %v, lists %v; want one object named", file.Single, got)
	}
	tree, err := open(context.Background(), filepath.Join(dir, "a"), store.Options{Name: func(string) string { return "unused" }})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(tree); tree.Single || !slices.Equal(got, []string{"1", "b/2"}) || !slices.Equal(reported, []string{"link"}) {
		t.Errorf("a tree: single %v, lists %v, reported %v; want 1 and b/2, the link reported", tree.Single, got, reported)
	}
	if _, err := open(context.Background(), filepath.Join(dir, "none"), store.Options{}); err == nil {
		t.Error("a missing path opened")
	}
	if _, err := open(context.Background(), filepath.Join(dir, "a/1"), store.Options{Version: "v1"}); err == nil {
		t.Error("a version of a file opened")
	}
}
