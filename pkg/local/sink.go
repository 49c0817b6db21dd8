package local

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// Sink writes objects as files under a root directory. Writes go through
// os.Root, so no symlink or name leads outside the root.
type Sink struct {
	root *os.Root
	dir  string
}

// NewSink opens dir (creating it if needed) as the root of a sink, and
// checks that it is writable before any data is fetched.
func NewSink(dir string) (*Sink, error) {
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, fmt.Errorf("destination %s: %w", dir, err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("destination %s: %w", dir, err)
	}
	s := &Sink{root: root, dir: dir}
	if err := s.probe(); err != nil {
		root.Close()
		return nil, fmt.Errorf("destination %s is not writable: %w", dir, err)
	}
	return s, nil
}

func (s *Sink) probe() error {
	name := fmt.Sprintf(".s3pd-probe-%d", os.Getpid())
	f, err := s.root.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return unwrapPath(err)
	}
	f.Close()
	return s.root.Remove(name)
}

// Close releases the root.
func (s *Sink) Close() error { return s.root.Close() }

// TempName is the temporary name an object's file has while it is
// written: hidden, in the same directory, and short whatever the final
// name's length.
func TempName(rel string) string {
	sum := sha256.Sum256([]byte(rel))
	return path.Join(path.Dir(rel), ".s3pd-"+hex.EncodeToString(sum[:8])+".partial")
}

// Create implements transfer.Sink.
func (s *Sink) Create(_ context.Context, obj transfer.Object) (transfer.File, error) {
	rel, err := RelPath(obj.Name)
	if err != nil {
		return nil, transfer.Permanent(err)
	}
	if dir := path.Dir(rel); dir != "." {
		if err := s.root.MkdirAll(dir, 0o777); err != nil {
			return nil, transfer.Permanent(fmt.Errorf("mkdir %s: %w", path.Join(s.dir, dir), unwrapPath(err)))
		}
	}
	tmp := TempName(rel)
	f, err := s.root.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
	if err != nil {
		return nil, transfer.Permanent(fmt.Errorf("create %s: %w", path.Join(s.dir, tmp), unwrapPath(err)))
	}
	if obj.Size > 0 {
		if err := f.Truncate(obj.Size); err != nil {
			f.Close()
			s.root.Remove(tmp)
			return nil, transfer.Permanent(fmt.Errorf("size %s: %w", path.Join(s.dir, tmp), unwrapPath(err)))
		}
	}
	return &file{File: f, sink: s, tmp: tmp, rel: rel, mtime: obj}, nil
}

type file struct {
	*os.File
	sink     *Sink
	tmp, rel string
	mtime    transfer.Object
}

// Commit flushes the data to stable storage and renames the file into place.
func (f *file) Commit() error {
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", f.rel, unwrapPath(err))
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", f.rel, unwrapPath(err))
	}
	if !f.mtime.ModTime.IsZero() {
		f.sink.root.Chtimes(f.tmp, f.mtime.ModTime, f.mtime.ModTime)
	}
	if err := f.sink.root.Rename(f.tmp, f.rel); err != nil {
		f.sink.root.Remove(f.tmp)
		return fmt.Errorf("rename into %s: %w", f.rel, unwrapPath(err))
	}
	return nil
}

// Abort removes the temporary file.
func (f *file) Abort() error {
	f.Close()
	if err := f.sink.root.Remove(f.tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// unwrapPath drops the *PathError wrapper, whose path is relative to the
// root; callers name the path themselves.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
