package local

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// Options decide what the sink does with files already at the destination.
type Options struct {
	// Overwrite replaces files even when they look complete and unchanged.
	Overwrite bool
	// SizeOnly keeps a file of the object's size whatever its
	// modification time (the AWS CLI's --size-only).
	SizeOnly bool
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
	// NoLock skips the destination lock, for file systems that refuse
	// locks; the user then promises that no other run writes there.
	NoLock bool
	// LockID, when set, makes the sink take the lock of one part of the
	// destination (a shard of the keys) instead of the whole of it: runs
	// with different LockIDs share the destination, a run with the same
	// LockID or with none is refused. See destLock.
	LockID string
	// Warn, when set, receives warnings the sink does not fail for: a
	// resume journal ignored because it does not match its partial file.
	Warn func(msg string)
	// ResumeMin is the smallest object that can have a partial file to
	// resume: objects below it are fetched in one request, so no journal
	// is looked for (the engine's multipart threshold).
	ResumeMin int64
	// DirectIO writes files around the page cache, with O_DIRECT (see
	// DirectMode); a file system that refuses it falls back to the page
	// cache with one warning.
	DirectIO DirectMode
	// StageSize is the size of a direct I/O staging buffer (StageSize);
	// it is rounded up to the file system's alignment.
	StageSize int
	// RefuseDirect makes the sink act as if the file system refused
	// O_DIRECT, for tests of the fallback.
	RefuseDirect bool
}

// Sink writes objects as files under a root directory. Writes go through
// os.Root, so no symlink or name leads outside the root.
type Sink struct {
	root *os.Root
	// rootFd is the root directory as an O_PATH descriptor: the hot path
	// (one file per object) opens, renames and removes relative to it, or
	// to a directory opened beneath it, with openat2(RESOLVE_BENEATH), a
	// system call each, where os.Root spends several.
	rootFd int
	// workFd is the work folder (WorkDir) holding partial files and
	// journals, -1 in a dry run.
	workFd int
	lock   *destLock
	// runID names this run's partial files, so a journal can tell the
	// file it describes from one another run made under the same name.
	runID  string
	closed bool
	dir    string
	// made are the folders NewSink made for dir, dir first: Close removes
	// those left empty, so a run that landed nothing leaves no DEST.
	made []string
	opts Options
	// empty: the root held nothing when the sink opened, so no file in it
	// can be unchanged and Check looks for none (a stat per object saved
	// on a fresh download; files others create meanwhile are not seen).
	empty bool
	// direct is the sink's direct I/O, nil when it writes through the
	// page cache; directStatus then says why.
	direct       *direct
	directStatus DirectStatus
	// leftovers: the work folder may hold journals of earlier runs (a
	// run over the whole destination knows from its sweep), so an object
	// that does not resume removes its own
	leftovers bool
	// kept are the names in the work folder that this run suspended for
	// a rerun; a run over the whole destination removes every other one
	// when it closes
	keptMu sync.Mutex
	kept   map[string]bool
	// writing are the partial files open for writing, by the path
	// relative to the root of the object's final name (Writing)
	writingMu sync.Mutex
	writing   map[string]string
}

// NewSink opens dir (creating it if needed) as the root of a sink, takes
// the destination's lock, and checks that it is writable before any data
// is fetched. A dry run takes no lock and makes no work folder.
func NewSink(dir string, opts Options) (*Sink, error) {
	made := missingDirs(dir)
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, fmt.Errorf("destination %s: %w", dir, err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("destination %s: %w", dir, err)
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		root.Close()
		return nil, fmt.Errorf("destination %s: %w", dir, err)
	}
	s := &Sink{root: root, rootFd: fd, workFd: -1, dir: dir, made: made, opts: opts, runID: newRunID(), writing: map[string]string{}}
	if !opts.DryRun {
		if err := s.openWork(); err != nil {
			s.Close()
			return nil, err
		}
		s.leftovers = true
		if opts.LockID == "" {
			s.leftovers = s.sweep()
		}
	}
	s.startDirect()
	if err := s.probe(); err != nil {
		s.Close()
		return nil, fmt.Errorf("destination %s is not writable: %w", dir, err)
	}
	s.empty = s.isEmpty()
	return s, nil
}

// openWork makes the work folder, opens it and takes the lock in it. A
// work folder that an ending run removed meanwhile is made again.
func (s *Sink) openWork() error {
	for range 10 {
		if err := unix.Mkdirat(s.rootFd, WorkDir, 0o777); err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("destination %s is not writable: mkdir %s: %w", s.dir, WorkDir, err)
		}
		wfd, err := unix.Openat2(s.rootFd, WorkDir, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC | unix.O_NOFOLLOW, Resolve: beneath})
		if errors.Is(err, unix.ENOENT) {
			continue
		}
		if err != nil {
			return fmt.Errorf("destination %s: open %s: %w", s.dir, WorkDir, err)
		}
		if s.opts.NoLock {
			s.workFd = wfd
			return nil
		}
		l, err := lockDest(wfd, s.dir, s.opts.LockID)
		if err != nil {
			unix.Close(wfd)
			if errors.Is(err, unix.ENOENT) {
				continue
			}
			// Refused: leave no empty work folder behind (one that
			// holds another run's lock stays).
			unix.Unlinkat(s.rootFd, WorkDir, unix.AT_REMOVEDIR)
			return err
		}
		var held, now unix.Stat_t
		if unix.Fstat(wfd, &held) == nil && unix.Fstatat(s.rootFd, WorkDir, &now, unix.AT_SYMLINK_NOFOLLOW) == nil &&
			held.Dev == now.Dev && held.Ino == now.Ino {
			s.workFd, s.lock = wfd, l
			return nil
		}
		l.release() // the folder was removed under us: start over
		unix.Close(wfd)
	}
	return fmt.Errorf("destination %s: %s keeps being replaced", s.dir, WorkDir)
}

// isEmpty reports whether the root holds no entry but the work folder
// (false if it cannot tell).
func (s *Sink) isEmpty() bool {
	d, err := s.root.Open(".")
	if err != nil {
		return false
	}
	defer d.Close()
	names, err := d.Readdirnames(2)
	if len(names) > 0 && names[0] == WorkDir {
		names = names[1:]
	} else if len(names) > 1 && names[1] == WorkDir {
		names = names[:1]
	}
	return len(names) == 0 && (errors.Is(err, io.EOF) || err == nil)
}

func (s *Sink) probe() error {
	name := fmt.Sprintf(".s3pd-probe-%d", os.Getpid())
	if s.workFd >= 0 {
		name = path.Join(WorkDir, fmt.Sprintf("probe-%d", os.Getpid()))
	}
	f, err := s.root.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return unwrapPath(err)
	}
	f.Close()
	return s.root.Remove(name)
}

// Destination is the path at which the object named name lands, or ""
// for a name the sink refuses: a path cleaned from it ("a//b" as
// "DEST/a/b") would name another object's file.
func (s *Sink) Destination(name string) string {
	if _, err := s.keyPath(strings.TrimSuffix(name, "/")); err != nil {
		return ""
	}
	return filepath.Join(s.dir, filepath.FromSlash(name))
}

// Writing is the path of the partial file the sink is writing the
// object named name into, before it commits it under its final name;
// "" when it has none open. Its bytes are those written so far: what is
// in them is for the writer to say (a fleet serves the parts the engine
// reported written).
func (s *Sink) Writing(name string) string {
	rel, err := s.keyPath(name)
	if err != nil {
		return ""
	}
	s.writingMu.Lock()
	defer s.writingMu.Unlock()
	return s.writing[rel]
}

// track records f's partial file as open for writing, until release.
func (s *Sink) track(f *file) {
	s.writingMu.Lock()
	s.writing[f.rel] = filepath.Join(s.dir, WorkDir, f.tmpBase)
	s.writingMu.Unlock()
}

// untrack forgets f's partial file (Writing).
func (s *Sink) untrack(f *file) {
	s.writingMu.Lock()
	if s.writing[f.rel] == filepath.Join(s.dir, WorkDir, f.tmpBase) {
		delete(s.writing, f.rel)
	}
	s.writingMu.Unlock()
}

// Close releases the lock, removes the work folder if nothing is left in
// it for a later run, and releases the root.
func (s *Sink) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	if s.workFd >= 0 && s.lock != nil && s.opts.LockID == "" {
		// Under the whole destination's lock no other run writes here:
		// what this run did not keep for a rerun is a leftover.
		s.clearWork()
	}
	if s.lock != nil {
		s.lock.release()
	}
	if s.workFd >= 0 {
		unix.Unlinkat(s.rootFd, WorkDir, unix.AT_REMOVEDIR)
		unix.Close(s.workFd)
	}
	unix.Close(s.rootFd)
	err := s.root.Close()
	for _, d := range s.made {
		if os.Remove(d) != nil { // not empty: something landed
			break
		}
	}
	return err
}

// missingDirs are dir and those of its parents that do not exist, dir
// first: what MkdirAll(dir) is about to make.
func missingDirs(dir string) []string {
	var out []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); !errors.Is(err, os.ErrNotExist) {
			return out
		}
		out = append(out, d)
		if filepath.Dir(d) == d {
			return out
		}
	}
}

// beneath is how every path under the root is resolved: never above it,
// never through /proc magic links.
const beneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS

// openDir opens dir (relative to the root, already made) for *at calls.
func (s *Sink) openDir(dir string) (int, error) {
	if dir == "." {
		return s.rootFd, nil
	}
	return unix.Openat2(s.rootFd, dir, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: beneath})
}

func (s *Sink) closeDir(fd int) {
	if fd != s.rootFd {
		unix.Close(fd)
	}
}

// partialHash names an object's partial file and journal in the work
// folder: short whatever the final name's length, and out of reach of
// every key.
func partialHash(rel string) string {
	sum := sha256.Sum256([]byte(rel))
	return hex.EncodeToString(sum[:12])
}

// newRunID returns a random run id (16 hex digits).
func newRunID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (s *Sink) warn(msg string) {
	if s.opts.Warn != nil {
		s.opts.Warn(msg)
	}
}

// Check implements transfer.Checker: a file already at the final name is
// skipped when it is complete and unchanged (the object's size and
// modification time, which Commit gives every file), or always with
// NoClobber; a directory marker creates its directory.
func (s *Sink) Check(obj transfer.Object) error {
	if dir, ok := strings.CutSuffix(obj.Name, "/"); ok && obj.Size == 0 {
		if dir != "" {
			if _, err := s.keyPath(dir); err != nil {
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
	rel, err := s.keyPath(obj.Name)
	if err != nil {
		return transfer.Permanent(err)
	}
	if s.opts.Overwrite || s.empty && !s.opts.NoClobber {
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
	if s.opts.SizeOnly {
		return &transfer.SkipError{Reason: "unchanged (size, --size-only)"}
	}
	if !obj.ModTime.IsZero() && st.ModTime().Equal(obj.ModTime) {
		return &transfer.SkipError{Reason: "unchanged (size and mtime)"}
	}
	return nil
}

// OpenExisting implements transfer.Existing: it opens the regular file at
// obj's final name (through the root: no symlink leads out of it).
func (s *Sink) OpenExisting(obj transfer.Object) (io.ReadCloser, error) {
	rel, err := s.keyPath(obj.Name)
	if err != nil {
		return nil, err
	}
	f, err := s.root.OpenFile(rel, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file", rel)
	}
	return f, nil
}

// Create implements transfer.Sink. A partial file left by an earlier run
// of the same object version is resumed; otherwise a fresh one is made.
func (s *Sink) Create(_ context.Context, obj transfer.Object) (transfer.File, error) {
	rel, err := s.keyPath(obj.Name)
	if err != nil {
		return nil, transfer.Permanent(err)
	}
	dir := path.Dir(rel)
	if dir != "." {
		if err := s.mkdirAll(dir); err != nil {
			return nil, transfer.Permanent(err)
		}
	}
	dfd, err := s.openDir(dir)
	if err != nil {
		return nil, transfer.Permanent(fmt.Errorf("open %s: %w", path.Join(s.dir, dir), err))
	}
	hash := partialHash(rel)
	f := &file{sink: s, rel: rel, dirfd: dfd, base: path.Base(rel), obj: obj, direct: -1}
	direct := s.wantsDirect(obj)
	multipart := obj.Size >= s.opts.ResumeMin && obj.Size > 0
	if multipart && !s.opts.NoResume {
		if j, fh, tmp := s.resume(hash, obj); j != nil {
			f.File, f.journal, f.tmpBase = fh, j, tmp
			s.track(f)
			if direct {
				return s.makeDirect(f), nil
			}
			return f, nil
		}
	} else if s.leftovers {
		// Not resumed (--no-resume, or below this run's threshold when
		// an earlier run's was lower): an earlier journal of the object
		// would outlive it.
		s.forget(hash)
	}
	f.tmpBase = partialName(hash, s.runID)
	tmp := path.Join(WorkDir, f.tmpBase)
	// O_EXCL: a key listed twice in one run cannot share a partial file.
	fd, err := unix.Openat2(s.workFd, f.tmpBase, &unix.OpenHow{
		Flags: unix.O_RDWR | unix.O_CREAT | unix.O_EXCL | unix.O_CLOEXEC | unix.O_NOFOLLOW, Mode: 0o666, Resolve: beneath})
	if errors.Is(err, unix.EEXIST) {
		s.closeDir(dfd)
		return nil, transfer.Permanent(fmt.Errorf("%s is already being written by this run (listed twice?)", rel))
	}
	if err != nil {
		s.closeDir(dfd)
		return nil, transfer.Permanent(fmt.Errorf("create %s: %w", path.Join(s.dir, tmp), err))
	}
	f.File = os.NewFile(uintptr(fd), path.Join(s.dir, tmp))
	s.track(f)
	switch {
	case direct:
		// Blocks reserved up front: parts land anywhere, and a direct
		// write into a hole would allocate under it.
		if err := preallocate(f.File, obj.Size); err != nil {
			f.Abort()
			return nil, transfer.Permanent(fmt.Errorf("preallocate %s: %w", path.Join(s.dir, tmp), unwrapPath(err)))
		}
	case multipart:
		// Parts land anywhere: size the file first. An object fetched in
		// one request is written in order and needs no sizing.
		if err := f.File.Truncate(obj.Size); err != nil {
			f.Abort()
			return nil, transfer.Permanent(fmt.Errorf("size %s: %w", path.Join(s.dir, tmp), unwrapPath(err)))
		}
	}
	if multipart {
		if !s.opts.NoResume {
			b, err := bindingOf(s.runID, fd)
			if err != nil {
				f.Abort()
				return nil, transfer.Permanent(fmt.Errorf("stat %s: %w", path.Join(s.dir, tmp), err))
			}
			f.journal = newJournal(s.workFd, hash, obj, b)
		}
	}
	if direct {
		return s.makeDirect(f), nil
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
	sink          *Sink
	rel           string // relative to the root
	dirfd         int    // the directory of the final name
	tmpBase, base string // the names in the work folder and in dirfd
	obj           transfer.Object
	journal       *journal
	// direct is the O_DIRECT descriptor of a directFile, -1 otherwise.
	direct int
	// ended: the file was committed, aborted or suspended, and its
	// descriptors are closed. Only the goroutine that ends the object
	// touches it.
	ended bool
}

// Completed implements transfer.Journal.
func (f *file) Completed(off, n int64) (int64, string) {
	if f.journal == nil {
		return 0, ""
	}
	return f.journal.completed(off, n)
}

// Extent implements transfer.Extents.
func (f *file) Extent(off int64) (n, next int64) {
	if f.journal == nil {
		return 0, -1
	}
	return f.journal.extent(off)
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
func (f *file) Suspend() (bool, error) {
	if f.ended {
		return false, nil
	}
	defer f.release()
	var err error
	if f.journal != nil {
		err = f.journal.flush(f.File)
		f.journal.close()
	}
	if f.journal == nil || f.journal.f == nil || err != nil || !f.journal.hasParts() {
		// Nothing durable to resume from: nothing is kept.
		if f.journal != nil {
			f.journal.remove()
		}
		unix.Unlinkat(f.sink.workFd, f.tmpBase, 0)
		return false, err
	}
	f.sink.keep(f.tmpBase, f.journal.name)
	return true, nil
}

// Commit flushes the data to stable storage and renames the file into
// place (without replacing anything under NoClobber). Whatever happens,
// the file is ended when Commit returns: on failure the partial file is
// already removed, and a later Abort or Suspend does nothing.
func (f *file) Commit() error {
	if f.ended {
		return errEnded
	}
	err := f.commit()
	if err != nil {
		f.discard()
		return err
	}
	if f.journal != nil {
		f.journal.remove()
	}
	f.release()
	return nil
}

func (f *file) commit() error {
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", f.rel, unwrapPath(err))
	}
	if f.direct >= 0 {
		// The few pages written through the cache (partial blocks) are
		// clean now: drop them too.
		unix.Fadvise(int(f.File.Fd()), 0, 0, unix.FADV_DONTNEED)
	}
	if !f.obj.ModTime.IsZero() {
		setMtime(f.File, f.obj.ModTime)
	}
	return f.place()
}

// errEnded reports a second end of a file (a bug in the caller).
var errEnded = errors.New("file already committed, aborted or suspended")

// release closes the file's descriptors. Every way a file ends (Commit,
// Abort, Suspend) goes through it exactly once: a descriptor number closed
// twice may by then belong to another object's file or directory.
func (f *file) release() {
	if f.ended {
		return
	}
	f.ended = true
	f.sink.untrack(f)
	f.File.Close()
	if f.direct >= 0 {
		unix.Close(f.direct)
		f.direct = -1
	}
	f.sink.closeDir(f.dirfd)
	f.dirfd = -1
}

// discard removes the partial file and its journal, then releases.
func (f *file) discard() error {
	if f.ended {
		return nil
	}
	defer f.release()
	if f.journal != nil {
		f.journal.remove()
	}
	if err := unix.Unlinkat(f.sink.workFd, f.tmpBase, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return err
	}
	return nil
}

func (f *file) place() error {
	d, w := f.dirfd, f.sink.workFd
	if f.sink.opts.NoClobber {
		// link(2) fails if the name exists: no check-then-rename race.
		if err := unix.Linkat(w, f.tmpBase, d, f.base, 0); err != nil {
			if errors.Is(err, unix.EEXIST) {
				return transfer.Permanent(&transfer.SkipError{Reason: "appeared during the run (--no-clobber)"})
			}
			return fmt.Errorf("link into %s: %w", f.rel, err)
		}
		return unix.Unlinkat(w, f.tmpBase, 0)
	}
	err := unix.Renameat(w, f.tmpBase, d, f.base)
	if err == nil {
		return nil
	}
	var st unix.Stat_t
	if serr := unix.Fstatat(d, f.base, &st, unix.AT_SYMLINK_NOFOLLOW); serr != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return fmt.Errorf("rename into %s: %w", f.rel, err)
	}
	if f.sink.opts.ConflictSuffix == "" {
		return fmt.Errorf("conflict: %s is both an object and a prefix; use --conflict-suffix to keep both", f.rel)
	}
	if err := unix.Renameat(w, f.tmpBase, d, f.base+f.sink.opts.ConflictSuffix); err != nil {
		return fmt.Errorf("rename into %s: %w", f.rel+f.sink.opts.ConflictSuffix, err)
	}
	return nil
}

// Abort removes the temporary file and its journal.
func (f *file) Abort() error { return f.discard() }

// unwrapPath drops the *PathError wrapper, whose path is relative to the
// root; callers name the path themselves.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
