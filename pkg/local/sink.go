package local

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// Options decide what the sink does with files already at the destination.
type Options struct {
	// Overwrite replaces files even when they look complete and unchanged.
	Overwrite bool
	// NoClobber never replaces an existing file, even one that appears
	// during the run.
	NoClobber bool
	// ConflictSuffix resolves a key that is both an object and a prefix
	// ("a" and "a/b"): the object lands at "a"+ConflictSuffix. Empty
	// means such an object fails with a conflict error.
	ConflictSuffix string
	// NoResume discards partial files of earlier runs instead of
	// resuming them.
	NoResume bool
	// DryRun makes Check free of side effects (no directory is made).
	DryRun bool
	// ResumeMin is the smallest object that can have a partial file to
	// resume: objects below it are fetched in one request, so no journal
	// is looked for (the engine's multipart threshold).
	ResumeMin int64
}

// Sink writes objects as files under a root directory. Writes go through
// os.Root, so no symlink or name leads outside the root.
type Sink struct {
	root *os.Root
	dir  string
	opts Options
}

// etagAttr is the extended attribute that records the ETag a file was
// downloaded at, so a rerun can tell it is unchanged.
const etagAttr = "user.s3pd.etag"

// NewSink opens dir (creating it if needed) as the root of a sink, and
// checks that it is writable before any data is fetched.
func NewSink(dir string, opts Options) (*Sink, error) {
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, fmt.Errorf("destination %s: %w", dir, err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("destination %s: %w", dir, err)
	}
	s := &Sink{root: root, dir: dir, opts: opts}
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

// Check implements transfer.Checker: a file already at the final name is
// skipped when it is complete and unchanged (same size, and the ETag it
// was downloaded at or the object's modification time), or always with
// NoClobber; a directory marker creates its directory.
func (s *Sink) Check(obj transfer.Object) error {
	if dir, ok := strings.CutSuffix(obj.Name, "/"); ok && obj.Size == 0 {
		if dir != "" {
			if _, err := RelPath(dir); err != nil {
				return transfer.Permanent(err)
			}
			if s.opts.DryRun {
				return &transfer.SkipError{Reason: "directory marker: would create directory"}
			}
			if err := s.mkdirAll(dir); err != nil {
				return transfer.Permanent(err)
			}
		}
		return &transfer.SkipError{Reason: "directory marker: directory created"}
	}
	rel, err := RelPath(obj.Name)
	if err != nil {
		return transfer.Permanent(err)
	}
	if s.opts.Overwrite {
		return nil
	}
	st, err := s.root.Lstat(rel)
	if err != nil {
		return nil
	}
	if s.opts.NoClobber {
		return &transfer.SkipError{Reason: "exists (--no-clobber)"}
	}
	if !st.Mode().IsRegular() || st.Size() != obj.Size {
		return nil
	}
	if obj.ETag != "" && s.etagOf(rel) == obj.ETag {
		return &transfer.SkipError{Reason: "unchanged (size and etag)"}
	}
	if !obj.ModTime.IsZero() && st.ModTime().Equal(obj.ModTime) {
		return &transfer.SkipError{Reason: "unchanged (size and mtime)"}
	}
	return nil
}

func (s *Sink) etagOf(rel string) string {
	f, err := s.root.Open(rel)
	if err != nil {
		return ""
	}
	defer f.Close()
	buf := make([]byte, 256)
	n, err := unix.Fgetxattr(int(f.Fd()), etagAttr, buf)
	if err != nil {
		return ""
	}
	return string(buf[:n])
}

// Create implements transfer.Sink. A partial file left by an earlier run
// of the same object version is resumed; otherwise a fresh one is made.
func (s *Sink) Create(_ context.Context, obj transfer.Object) (transfer.File, error) {
	rel, err := RelPath(obj.Name)
	if err != nil {
		return nil, transfer.Permanent(err)
	}
	if dir := path.Dir(rel); dir != "." {
		if err := s.mkdirAll(dir); err != nil {
			return nil, transfer.Permanent(err)
		}
	}
	tmp := TempName(rel)
	f := &file{sink: s, tmp: tmp, rel: rel, obj: obj}
	if !s.opts.NoResume && obj.Size >= s.opts.ResumeMin {
		if j, fh := s.resume(tmp, obj); j != nil {
			f.File, f.journal = fh, j
			return f, nil
		}
	}
	fh, err := s.root.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
	if err != nil {
		return nil, transfer.Permanent(fmt.Errorf("create %s: %w", path.Join(s.dir, tmp), unwrapPath(err)))
	}
	if obj.Size > 0 {
		if err := fh.Truncate(obj.Size); err != nil {
			fh.Close()
			s.root.Remove(tmp)
			return nil, transfer.Permanent(fmt.Errorf("size %s: %w", path.Join(s.dir, tmp), unwrapPath(err)))
		}
	}
	f.File = fh
	if obj.Size > 0 && obj.Size >= s.opts.ResumeMin && !s.opts.NoResume {
		j, err := newJournal(s.root, tmp, obj)
		if err != nil {
			fh.Close()
			s.root.Remove(tmp)
			return nil, transfer.Permanent(err)
		}
		f.journal = j
	}
	return f, nil
}

// mkdirAll creates dir under the root. A path component that is a file
// (object "a" beside prefix "a/") is a conflict: moved aside with
// ConflictSuffix, or reported.
func (s *Sink) mkdirAll(dir string) error {
	err := s.root.MkdirAll(dir, 0o777)
	if err == nil || !errors.Is(err, syscall.ENOTDIR) && !errors.Is(err, syscall.EEXIST) {
		if err != nil {
			return fmt.Errorf("mkdir %s: %w", path.Join(s.dir, dir), unwrapPath(err))
		}
		return nil
	}
	file := s.fileComponent(dir)
	if file == "" {
		return fmt.Errorf("mkdir %s: %w", path.Join(s.dir, dir), unwrapPath(err))
	}
	if s.opts.ConflictSuffix == "" {
		return fmt.Errorf("conflict: %s is both an object and a prefix; use --conflict-suffix to keep both", file)
	}
	if rerr := s.root.Rename(file, file+s.opts.ConflictSuffix); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
		return fmt.Errorf("conflict: move %s aside: %w", file, unwrapPath(rerr))
	}
	if err := s.root.MkdirAll(dir, 0o777); err != nil {
		return fmt.Errorf("mkdir %s: %w", path.Join(s.dir, dir), unwrapPath(err))
	}
	return nil
}

// fileComponent returns the first component of dir that is not a directory.
func (s *Sink) fileComponent(dir string) string {
	p := ""
	for _, c := range strings.Split(dir, "/") {
		p = path.Join(p, c)
		st, err := s.root.Lstat(p)
		if err != nil {
			return ""
		}
		if !st.IsDir() {
			return p
		}
	}
	return ""
}

type file struct {
	*os.File
	sink     *Sink
	tmp, rel string
	obj      transfer.Object
	journal  *journal
}

// Completed implements transfer.Journal.
func (f *file) Completed(off, n int64) (string, bool) {
	if f.journal == nil {
		return "", false
	}
	return f.journal.completed(off, n)
}

// PartDone implements transfer.Journal.
func (f *file) PartDone(off, n int64, sum string) error {
	if f.journal == nil {
		return nil
	}
	return f.journal.add(f.File, journaled{off: off, n: n, sum: sum})
}

// Suspend implements transfer.Journal: it makes the journal durable and
// keeps the partial file for the next run.
func (f *file) Suspend() error {
	defer f.File.Close()
	var err error
	if f.journal != nil {
		err = f.journal.flush(f.File)
		f.journal.close()
	}
	if f.journal == nil || f.journal.f == nil {
		f.sink.root.Remove(f.tmp) // nothing durable to resume from
	}
	return err
}

// Commit flushes the data to stable storage and renames the file into
// place (without replacing anything under NoClobber).
func (f *file) Commit() error {
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", f.rel, unwrapPath(err))
	}
	if f.obj.ETag != "" {
		// Best effort: filesystems without user xattrs fall back to mtime.
		unix.Fsetxattr(int(f.Fd()), etagAttr, []byte(f.obj.ETag), 0)
	}
	if !f.obj.ModTime.IsZero() {
		setMtime(f.File, f.obj.ModTime)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", f.rel, unwrapPath(err))
	}
	if err := f.place(); err != nil {
		f.sink.root.Remove(f.tmp)
		return err
	}
	if f.journal != nil {
		f.journal.remove()
	}
	return nil
}

func (f *file) place() error {
	root := f.sink.root
	if f.sink.opts.NoClobber {
		// link(2) fails if the name exists: no check-then-rename race.
		if err := root.Link(f.tmp, f.rel); err != nil {
			if errors.Is(err, os.ErrExist) {
				return transfer.Permanent(&transfer.SkipError{Reason: "appeared during the run (--no-clobber)"})
			}
			return fmt.Errorf("link into %s: %w", f.rel, unwrapPath(err))
		}
		return root.Remove(f.tmp)
	}
	err := root.Rename(f.tmp, f.rel)
	if err == nil {
		return nil
	}
	st, serr := root.Lstat(f.rel)
	if serr != nil || !st.IsDir() {
		return fmt.Errorf("rename into %s: %w", f.rel, unwrapPath(err))
	}
	if f.sink.opts.ConflictSuffix == "" {
		return fmt.Errorf("conflict: %s is both an object and a prefix; use --conflict-suffix to keep both", f.rel)
	}
	if err := root.Rename(f.tmp, f.rel+f.sink.opts.ConflictSuffix); err != nil {
		return fmt.Errorf("rename into %s: %w", f.rel+f.sink.opts.ConflictSuffix, unwrapPath(err))
	}
	return nil
}

// Abort removes the temporary file and its journal.
func (f *file) Abort() error {
	f.File.Close()
	if f.journal != nil {
		f.journal.remove()
	}
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
