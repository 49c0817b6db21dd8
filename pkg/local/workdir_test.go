package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// TestSinkLocksTheDestination: while a sink is open, a second one on the
// same destination is refused at once, naming the holder's pid; shards
// (lock identities) share it with each other but not with a whole run;
// closing releases the lock and removes the work folder.
func TestSinkLocksTheDestination(t *testing.T) {
	tests := []struct {
		name          string
		first, second string // lock identities; "" is the whole destination
		ok            bool
	}{
		{"whole then whole", "", "", false},
		{"whole then shard", "", "0of2", false},
		{"shard then whole", "0of2", "", false},
		{"same shard", "0of2", "0of2", false},
		{"two shards", "0of2", "1of2", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			first, err := NewSink(dir, Options{LockID: tt.first})
			if err != nil {
				t.Fatal(err)
			}
			second, err := NewSink(dir, Options{LockID: tt.second})
			if tt.ok {
				if err != nil {
					t.Fatalf("second sink: %v, want it to share the destination", err)
				}
				second.Close()
			} else {
				want := fmt.Sprintf("pid %d", os.Getpid())
				if !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), want) {
					first.Close()
					t.Fatalf("second sink: %v, want ErrInUse naming %s", err, want)
				}
			}
			first.Close()
			if _, err := os.Stat(filepath.Join(dir, WorkDir)); !os.IsNotExist(err) {
				t.Errorf("work folder after both closed: %v, want it removed", err)
			}
			again, err := NewSink(dir, Options{LockID: tt.second})
			if err != nil {
				t.Fatalf("after close: %v", err)
			}
			again.Close()
		})
	}
}

func TestSinkLockIdentityIsAFileNamePart(t *testing.T) {
	for _, id := range []string{"../x", "a/b", strings.Repeat("x", 65), "a b"} {
		if s, err := NewSink(t.TempDir(), Options{LockID: id}); err == nil {
			s.Close()
			t.Errorf("LockID %q accepted", id)
		}
	}
}

// TestSinkWhereLocksAreRefused: a file system that refuses flock fails
// the sink with ErrNoLock and names the way out; NoLock opens it.
func TestSinkWhereLocksAreRefused(t *testing.T) {
	saved := flockFn
	flockFn = func(int, int) error { return unix.ENOLCK }
	defer func() { flockFn = saved }()
	dir := t.TempDir()
	_, err := NewSink(dir, Options{})
	if !errors.Is(err, ErrNoLock) || !strings.Contains(err.Error(), "--no-lock") {
		t.Fatalf("NewSink: %v, want ErrNoLock naming --no-lock", err)
	}
	s, err := NewSink(dir, Options{NoLock: true})
	if err != nil {
		t.Fatalf("NoLock: %v", err)
	}
	if err := write(t, s, transfer.Object{Key: "k", Name: "k", Size: 2}, []byte("ok")); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := os.Stat(filepath.Join(dir, WorkDir)); !os.IsNotExist(err) {
		t.Errorf("work folder after close: %v, want it removed", err)
	}
}

// TestSinkRefusesTheWorkFolderByName: no key can name a file in the work
// folder, and keys that look like partial files are ordinary objects.
func TestSinkRefusesTheWorkFolderByName(t *testing.T) {
	s, dir := newTestSink(t, Options{})
	// At any depth: DEST/w/sub may be another run's DEST.
	for _, name := range []string{WorkDir + "/" + partialName(partialHash("a"), "0123456789abcdef"), WorkDir + "/lock", WorkDir + "/",
		"w/sub/" + WorkDir + "/lock", "x/" + WorkDir + "/y", "x/" + WorkDir, "x/" + WorkDir + "/"} {
		obj := transfer.Object{Key: name, Name: name, Size: 1}
		if strings.HasSuffix(name, "/") {
			obj.Size = 0 // a directory marker
		}
		err := s.Check(obj)
		if err == nil {
			_, err = s.Create(context.Background(), obj)
		}
		if !errors.Is(err, ErrReservedName) {
			t.Errorf("%q: %v, want ErrReservedName", name, err)
		}
	}
	for _, name := range []string{"x/.s3pd-0123456789abcdef.partial", "x/.s3pdx/y", ".s3pd-probe-1", "x/a.s3pd"} {
		if err := write(t, s, transfer.Object{Key: name, Name: name, Size: 4}, []byte("data")); err != nil {
			t.Errorf("%q: %v", name, err)
		}
		if got, _ := os.ReadFile(filepath.Join(dir, name)); string(got) != "data" {
			t.Errorf("%q holds %q", name, got)
		}
	}
}
