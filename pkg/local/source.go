package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// ErrSymlink marks a symbolic link that a Source did not follow.
var ErrSymlink = errors.New("symbolic link not followed")

// ErrSpecial marks a device, socket or named pipe, which a Source skips.
var ErrSpecial = errors.New("not a regular file")

// ErrLoop marks a followed symbolic link that leads back to a directory
// being walked.
var ErrLoop = errors.New("symbolic link loop")

// SourceOptions tune a Source.
type SourceOptions struct {
	// FollowSymlinks copies what symbolic links point to; without it each
	// link found is reported (ErrSymlink) and skipped.
	FollowSymlinks bool
	// Name is the destination name of a single-file source (default: the
	// file's base name).
	Name string
	// Report, when set, is called for each entry that is not listed: a
	// symbolic link (ErrSymlink), a special file (ErrSpecial), a link loop
	// (ErrLoop), or a directory or file that could not be read. It is
	// called from List's goroutine.
	Report func(path string, err error)
}

// Source lists the files under a local path and opens sections of them.
// A directory's contents land under the destination (DIR/a lands at a).
type Source struct {
	root   string
	single bool
	opts   SourceOptions
}

// NewSource checks that path exists and can be read, and returns a source
// over it: the file itself, or every regular file under the directory.
// The path itself is followed if it is a symbolic link.
func NewSource(p string, opts SourceOptions) (*Source, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("source %s: %w", p, unwrapPath(err))
	}
	s := &Source{root: filepath.Clean(p), opts: opts}
	switch {
	case st.Mode().IsRegular():
		s.single = true
		if s.opts.Name == "" {
			s.opts.Name = filepath.Base(s.root)
		}
	case st.IsDir():
	default:
		return nil, fmt.Errorf("source %s: %w", p, ErrSpecial)
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, fmt.Errorf("source %s: %w", p, unwrapPath(err))
	}
	f.Close()
	return s, nil
}

// Root is the source's path, cleaned.
func (s *Source) Root() string { return s.root }

// Single reports whether the source is one file.
func (s *Source) Single() bool { return s.single }

func (s *Source) report(p string, err error) {
	if s.opts.Report != nil {
		s.opts.Report(p, err)
	}
}

// List implements transfer.Source. It walks the tree depth first, reading
// each directory in batches, so memory does not grow with the number of
// files; every object's Key is its path, its Name the slash-separated
// path below the root.
func (s *Source) List(ctx context.Context, emit func(transfer.Object) error) error {
	if s.single {
		st, err := os.Stat(s.root)
		if err != nil {
			return fmt.Errorf("source %s: %w", s.root, unwrapPath(err))
		}
		return emit(object(s.root, s.opts.Name, st))
	}
	st, err := os.Stat(s.root)
	if err != nil {
		return fmt.Errorf("source %s: %w", s.root, unwrapPath(err))
	}
	return s.walk(ctx, s.root, "", []fileID{idOf(st)}, emit)
}

// fileID identifies a directory, to detect loops through followed links.
type fileID struct{ dev, ino uint64 }

func idOf(st fs.FileInfo) fileID {
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		return fileID{uint64(sys.Dev), sys.Ino}
	}
	return fileID{}
}

func object(key, name string, st fs.FileInfo) transfer.Object {
	o := transfer.Object{Key: key, Name: name, Size: st.Size(), ModTime: st.ModTime()}
	if o.Size == 0 && sizeless(key) {
		o.Size, o.Err = readSize(key) // read to the end to learn it
	}
	return o
}

// readSize reads a file that reports no size to its end (at most
// maxSizeless bytes) and returns how many bytes it gave. Open reads it
// again and reports the file modified when it then gives another count.
func readSize(p string) (int64, error) {
	f, err := os.Open(p)
	if err != nil {
		return 0, transfer.Permanent(fmt.Errorf("open %s: %w", p, unwrapPath(err)))
	}
	defer f.Close()
	n, err := io.Copy(io.Discard, io.LimitReader(f, maxSizeless+1))
	switch {
	case err != nil:
		return 0, transfer.Permanent(fmt.Errorf("read %s: %w", p, unwrapPath(err)))
	case n > maxSizeless:
		return 0, transfer.Permanent(fmt.Errorf("%s reports size 0 but holds more than %d bytes", p, maxSizeless))
	}
	return n, nil
}

// sizeless reports whether the zero-size file p lives on a file system
// that stores nothing (no blocks: procfs, sysfs, debugfs, ...), whose
// files report size 0 whatever they hold when read.
func sizeless(p string) bool {
	var fs unix.Statfs_t
	return unix.Statfs(p, &fs) == nil && fs.Blocks == 0
}

// maxSizeless bounds what is read of a file whose size is unknown.
const maxSizeless = 64 << 20

// openSizeless reads all of a file that reports no size and returns a
// body over bytes [off, off+n) of what it held (n < 0: to the end).
func openSizeless(f *os.File, obj *transfer.Object, off, n int64) (*transfer.Body, error) {
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxSizeless+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", obj.Key, unwrapPath(err))
	}
	if len(data) > maxSizeless {
		return nil, transfer.Permanent(fmt.Errorf("%s reports size 0 but holds more than %d bytes", obj.Key, maxSizeless))
	}
	size := int64(len(data))
	off = min(off, size)
	if n < 0 || off+n > size {
		n = size - off
	}
	return &transfer.Body{ReadCloser: memBody{bytes.NewReader(data[off : off+n])}, Off: off, Len: n, Size: size}, nil
}

// memBody is a seekable body held in memory.
type memBody struct{ *bytes.Reader }

// Close implements io.Closer.
func (memBody) Close() error { return nil }

// walkBatch is how many directory entries are read at a time.
const walkBatch = 512

// walk lists dir, whose name below the root is rel; ancestors are the
// directories on the way down, to stop loops through followed links.
func (s *Source) walk(ctx context.Context, dir, rel string, ancestors []fileID, emit func(transfer.Object) error) error {
	d, err := os.Open(dir)
	if err != nil {
		s.report(dir, unwrapPath(err))
		return nil
	}
	defer d.Close()
	for {
		ents, rerr := d.ReadDir(walkBatch)
		for _, e := range ents {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := s.entry(ctx, dir, rel, e, ancestors, emit); err != nil {
				return err
			}
		}
		if errors.Is(rerr, io.EOF) || rerr == nil && len(ents) == 0 {
			return nil
		}
		if rerr != nil {
			s.report(dir, unwrapPath(rerr))
			return nil
		}
	}
}

// entry lists one directory entry: emits a file, descends into a
// directory, reports anything else.
func (s *Source) entry(ctx context.Context, dir, rel string, e fs.DirEntry, ancestors []fileID, emit func(transfer.Object) error) error {
	p := filepath.Join(dir, e.Name())
	name := path.Join(rel, e.Name())
	t := e.Type()
	var st fs.FileInfo
	var err error
	if t&fs.ModeSymlink != 0 {
		if !s.opts.FollowSymlinks {
			target, _ := os.Readlink(p)
			s.report(p, fmt.Errorf("%w (-> %s)", ErrSymlink, target))
			return nil
		}
		st, err = os.Stat(p)
	} else {
		st, err = e.Info()
	}
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) || t&fs.ModeSymlink != 0 {
			s.report(p, unwrapPath(err)) // a broken link, or unreadable
		}
		return nil
	}
	switch {
	case st.Mode().IsRegular():
		return emit(object(p, name, st))
	case st.IsDir():
		id := idOf(st)
		for _, a := range ancestors {
			if a == id {
				s.report(p, ErrLoop)
				return nil
			}
		}
		return s.walk(ctx, p, name, append(ancestors, id), emit)
	default:
		s.report(p, ErrSpecial)
		return nil
	}
}

// Open implements transfer.Source: it opens obj's file and returns a body
// over bytes [off, off+n) (n < 0: to the end). The body is an
// io.ReadSeeker and io.ReaderAt over that section, and a local sink moves
// its bytes with copy_file_range. A file whose size changed since it was
// listed is reported modified.
func (s *Source) Open(_ context.Context, obj *transfer.Object, off, n int64) (*transfer.Body, error) {
	f, err := os.Open(obj.Key)
	if err != nil {
		return nil, transfer.Permanent(fmt.Errorf("open %s: %w", obj.Key, unwrapPath(err)))
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("stat %s: %w", obj.Key, unwrapPath(err))
	}
	size := st.Size()
	if size == 0 && obj.Size != 0 {
		// Listed with the size its first read found: the file's
		// contents are what reading it gives.
		b, err := openSizeless(f, obj, off, n)
		if err == nil && b.Size != obj.Size {
			return nil, transfer.Permanent(&changedError{fmt.Sprintf("%s was modified since it was listed (read %d bytes, first read %d)", obj.Key, b.Size, obj.Size)})
		}
		return b, err
	}
	if obj.Size >= 0 && size != obj.Size {
		f.Close()
		return nil, transfer.Permanent(&changedError{fmt.Sprintf("%s was modified since it was listed (size %d, listed %d)", obj.Key, size, obj.Size)})
	}
	if !obj.ModTime.IsZero() && !st.ModTime().Equal(obj.ModTime) {
		f.Close()
		return nil, transfer.Permanent(&changedError{fmt.Sprintf("%s was modified since it was listed (modified at %s, listed at %s)", obj.Key, st.ModTime().Format(time.RFC3339Nano), obj.ModTime.Format(time.RFC3339Nano))})
	}
	if n < 0 || off+n > size {
		n = max(size-off, 0)
	}
	fb := &FileBody{SectionReader: io.NewSectionReader(f, off, n), f: f, off: off, name: obj.Key, size: size, mtime: st.ModTime(), left: n}
	return &transfer.Body{ReadCloser: fb, Off: off, Len: n, Size: size}, nil
}

// unchanged fails when the file's size or modification time differ from
// those it had when the part was opened: a file rewritten while it is
// read would give a mix of old and new bytes.
func (b *FileBody) unchanged() error {
	st, err := b.f.Stat()
	if err != nil {
		return fmt.Errorf("stat %s: %w", b.name, unwrapPath(err))
	}
	if st.Size() != b.size || !st.ModTime().Equal(b.mtime) {
		return transfer.Permanent(&changedError{fmt.Sprintf("%s changed while it was read (size %d, was %d; modified %s, was %s)",
			b.name, st.Size(), b.size, st.ModTime().Format(time.RFC3339Nano), b.mtime.Format(time.RFC3339Nano))})
	}
	return nil
}

// changedError is a file that changed since it was listed or while it
// was read. It says so
// in its own words (the engine's ErrModified speaks of downloads) and
// is transfer.ErrModified to the engine.
type changedError struct{ msg string }

func (e *changedError) Error() string        { return e.msg }
func (e *changedError) Is(target error) bool { return target == transfer.ErrModified }

// Seek moves within the section (an upload reads a part twice: for its
// checksum, then to send it); the check runs again at the end.
func (b *FileBody) Seek(offset int64, whence int) (int64, error) {
	pos, err := b.SectionReader.Seek(offset, whence)
	if err == nil {
		b.left = b.SectionReader.Size() - pos
	}
	return pos, err
}

// Read reads the section; once its last byte is read it checks that the
// file did not change meanwhile.
func (b *FileBody) Read(p []byte) (int, error) {
	n, err := b.SectionReader.Read(p)
	if n > 0 {
		b.left -= int64(n)
		if b.left == 0 {
			if cerr := b.unchanged(); cerr != nil {
				return n, cerr
			}
		}
	}
	if err == io.EOF && b.left > 0 {
		// The file ends before the section: it was truncated.
		if cerr := b.unchanged(); cerr != nil {
			return n, cerr
		}
		return n, io.ErrUnexpectedEOF
	}
	return n, err
}

// FileBody is the body of a section of a local file. It is seekable, so
// an upload can send it with a checksum computed beforehand, and a local
// sink copies it in the kernel.
type FileBody struct {
	*io.SectionReader
	f   *os.File
	off int64
	// What the file was when the part was opened, to tell that it
	// changed while it was read.
	name  string
	size  int64
	mtime time.Time
	left  int64 // bytes of the section not yet read
}

// Close closes the file.
func (b *FileBody) Close() error { return b.f.Close() }

// File returns the open file and the offset the section starts at.
func (b *FileBody) File() (*os.File, int64) { return b.f, b.off }
