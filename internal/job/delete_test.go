package job

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/s3pd/s3pd/pkg/local"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// TestPruneLocal: --delete in a local destination removes the files the listing did not give and
// the rules keep, only after a complete listing, and a dry run removes
// nothing.
func TestPruneLocal(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"listed", "gone", "sub/gone", "excluded.log"} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sink, err := local.NewSink(dir, local.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	keep := func(name string) bool { return !strings.HasSuffix(name, ".log") }
	l := NewListed()
	l.Listed(transfer.Object{Name: "listed"})
	prune := func(dryRun bool) ([]string, error) {
		var got []string
		err := l.PruneWith(context.Background(), sink, keep, dryRun, func(name string, size int64) {
			if size != int64(len(name)) {
				t.Errorf("%s: size %d, want %d", name, size, len(name))
			}
			got = append(got, name)
		})
		slices.Sort(got)
		return got, err
	}
	exists := func(name string) bool {
		_, err := os.Stat(filepath.Join(dir, name))
		return err == nil
	}

	if got, err := prune(false); !errors.Is(err, ErrIncompleteListing) || len(got) != 0 || !exists("gone") {
		t.Fatalf("incomplete listing: removed %v, err %v; want nothing removed and ErrIncompleteListing", got, err)
	}
	l.ListingDone()
	want := []string{"gone", "sub/gone"}
	if got, err := prune(true); err != nil || !slices.Equal(got, want) || !exists("gone") || !exists("sub/gone") {
		t.Fatalf("dry run: reported %v, err %v; want %v reported and kept", got, err, want)
	}
	if got, err := prune(false); err != nil || !slices.Equal(got, want) {
		t.Fatalf("removed %v, err %v; want %v", got, err, want)
	}
	for name, want := range map[string]bool{"listed": true, "excluded.log": true, "gone": false, "sub/gone": false} {
		if exists(name) != want {
			t.Errorf("%s exists: %v, want %v", name, !want, want)
		}
	}
}
