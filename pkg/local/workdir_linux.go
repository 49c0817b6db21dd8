package local

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// WorkDir is the folder under the destination root where a sink keeps
// its lock, its partial files and their journals. No key can name it:
// an object with a component of that name, at any depth, is refused
// (ErrReservedName), so no object's content can ever replace a partial
// file, a journal or a lock of this run or of a run into a folder below.
const WorkDir = ".s3pd"

// ErrReservedName reports a key that names s3pd's work folder.
var ErrReservedName = errors.New("reserved name")

// ErrInUse reports a destination another s3pd run holds.
var ErrInUse = errors.New("in use by s3pd")

// ErrNoLock reports a destination whose file system refuses locks.
var ErrNoLock = errors.New("the file system refuses locks")

// ErrConflictName reports a key that ends in --conflict-suffix.
var ErrConflictName = errors.New("name reserved for conflict copies")

// keyPath is RelPath for the objects of a sink: it also refuses names
// inside the work folder, and, with a ConflictSuffix, names with a
// component that ends in it: such names are kept for the copies of
// objects that are also prefixes, so a copy never meets a real key.
func (s *Sink) keyPath(name string) (string, error) {
	rel, err := RelPath(name)
	if err != nil {
		return "", err
	}
	sfx := s.opts.ConflictSuffix
	for _, c := range strings.Split(rel, "/") {
		if c == WorkDir {
			// At any depth: DEST/sub may be another run's DEST, with
			// its own work folder and lock.
			return "", fmt.Errorf("%w %q: %s/ is the name of s3pd's work folder in a destination", ErrReservedName, name, WorkDir)
		}
		if sfx != "" && strings.HasSuffix(c, sfx) {
			return "", fmt.Errorf("%w %q: it ends in --conflict-suffix %q, the name of the copy of an object that is also a prefix; choose a suffix no key ends in", ErrConflictName, name, sfx)
		}
	}
	return rel, nil
}

// ObjectLockID is the lock identity of a run that writes the single
// object named name: such runs into one destination run together unless
// they write the same name; a run over the whole destination excludes
// them all.
func ObjectLockID(name string) string {
	return "file-" + partialHash(name)[:16]
}

// lockIDPattern is what a lock identity may be: a short file name part.
var lockIDPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// lockName is the lock file of identity id in the work folder: "lock"
// for a run over the whole destination, "lock.ID" for a run over a part
// of it (a shard).
func lockName(id string) string {
	if id == "" {
		return "lock"
	}
	return "lock." + id
}

// destLock is the advisory lock (flock) a sink holds on its destination
// while it is open. A run over the whole destination holds "lock"
// exclusively. A run with an identity (a shard of the keys) holds "lock"
// shared and "lock.ID" exclusively: shards with different identities run
// together, a second run with the same identity or a whole-destination
// run is refused at once. The holder's pid is written in the file it
// holds exclusively, for the message of the run refused.
type destLock struct {
	workFd int
	held   []heldLock // shared "lock" first (with an identity), then the exclusive file
}

type heldLock struct {
	fd        int
	name      string
	exclusive bool
}

// flockFn is flock(2); a test replaces it to stand for a file system that
// refuses locks.
var flockFn = unix.Flock

// lockDest takes the destination's lock in the work folder workFd.
func lockDest(workFd int, dir, id string) (*destLock, error) {
	if id != "" && !lockIDPattern.MatchString(id) {
		return nil, fmt.Errorf("lock identity %q: want 1-64 letters, digits, '.', '_' or '-'", id)
	}
	l := &destLock{workFd: workFd}
	if id != "" {
		if err := l.take(dir, "lock", unix.LOCK_SH); err != nil {
			return nil, err
		}
	}
	if err := l.take(dir, lockName(id), unix.LOCK_EX); err != nil {
		l.release()
		return nil, err
	}
	pid := []byte(strconv.Itoa(os.Getpid()) + "\n")
	fd := l.held[len(l.held)-1].fd
	if err := unix.Ftruncate(fd, 0); err == nil {
		unix.Pwrite(fd, pid, 0)
	}
	return l, nil
}

// take opens name and locks it with how, without waiting. A lock file
// its holder removed while this run opened it is opened again.
func (l *destLock) take(dir, name string, how int) error {
	for range 10 {
		const flags = unix.O_RDWR | unix.O_CLOEXEC | unix.O_NOFOLLOW
		made := true
		fd, err := unix.Openat(l.workFd, name, flags|unix.O_CREAT|unix.O_EXCL, 0o666)
		if errors.Is(err, unix.EEXIST) {
			made = false
			fd, err = unix.Openat(l.workFd, name, flags, 0)
		}
		if err != nil { // ENOENT: the folder or file was removed meanwhile; the caller starts over
			return fmt.Errorf("destination %s: open lock %s/%s: %w", dir, WorkDir, name, err)
		}
		if err := flockFn(fd, how|unix.LOCK_NB); err != nil {
			unix.Close(fd)
			if errors.Is(err, unix.EWOULDBLOCK) {
				return fmt.Errorf("destination %s is %w (%s)", dir, ErrInUse, l.holder(name))
			}
			if made {
				unix.Unlinkat(l.workFd, name, 0)
			}
			return fmt.Errorf("destination %s: lock %s/%s: %w: %w (run with --no-lock to go without, if no other run can write there)",
				dir, WorkDir, name, ErrNoLock, err)
		}
		var held, now unix.Stat_t
		if unix.Fstat(fd, &held) == nil && unix.Fstatat(l.workFd, name, &now, unix.AT_SYMLINK_NOFOLLOW) == nil &&
			held.Dev == now.Dev && held.Ino == now.Ino {
			l.held = append(l.held, heldLock{fd: fd, name: name, exclusive: how == unix.LOCK_EX})
			return nil
		}
		unix.Close(fd) // removed by a run that ended: take the new file
	}
	return fmt.Errorf("destination %s: lock %s/%s keeps being replaced", dir, WorkDir, name)
}

// holder describes the run that holds name: its pid when it wrote one,
// else the pid in any shard's lock file.
func (l *destLock) holder(name string) string {
	if pid := readPid(l.workFd, name); pid != "" {
		return "pid " + pid
	}
	if name == "lock" {
		if d, err := openDirAt(l.workFd); err == nil {
			names, _ := d.Readdirnames(-1)
			d.Close()
			for _, n := range names {
				if strings.HasPrefix(n, "lock.") {
					if pid := readPid(l.workFd, n); pid != "" {
						return "pid " + pid + ", a run with --shard"
					}
				}
			}
		}
	}
	return "pid unknown"
}

func readPid(dirfd int, name string) string {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return ""
	}
	defer unix.Close(fd)
	buf := make([]byte, 32)
	n, _ := unix.Pread(fd, buf, 0)
	pid := strings.TrimSpace(string(buf[:max(n, 0)]))
	if _, err := strconv.Atoi(pid); err != nil {
		return ""
	}
	return pid
}

// openDirAt opens the directory dirfd refers to for reading its names.
func openDirAt(dirfd int) (*os.File, error) {
	fd, err := unix.Openat(dirfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), WorkDir), nil
}

// release removes the lock files it can (each while still holding it
// exclusively: take checks that the file it locked is still the one
// named, so no run keeps a lock on a removed file) and unlocks them.
func (l *destLock) release() {
	for i := len(l.held) - 1; i >= 0; i-- {
		h := l.held[i]
		if h.exclusive || flockFn(h.fd, unix.LOCK_EX|unix.LOCK_NB) == nil {
			unix.Unlinkat(l.workFd, h.name, 0)
		}
		unix.Close(h.fd)
	}
	l.held = nil
}

// keep records names in the work folder suspended for a rerun.
func (s *Sink) keep(names ...string) {
	s.keptMu.Lock()
	defer s.keptMu.Unlock()
	if s.kept == nil {
		s.kept = map[string]bool{}
	}
	for _, n := range names {
		s.kept[n] = true
	}
}

// clearWork removes from the work folder every partial file and journal
// this run did not keep for a rerun: those of objects it finished, or
// did not resume (another threshold), or did not list. The locks stay
// for Close to release. So a run that keeps nothing leaves no work
// folder, whatever the thresholds of this run and the last.
func (s *Sink) clearWork() {
	d, err := openDirAt(s.workFd)
	if err != nil {
		return
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	s.keptMu.Lock()
	defer s.keptMu.Unlock()
	for _, n := range names {
		if n == "lock" || strings.HasPrefix(n, "lock.") || s.kept[n] {
			continue
		}
		unix.Unlinkat(s.workFd, n, 0)
	}
}
