package local

import (
	"bufio"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// journal records the parts of a partial file that are durable, so an
// interrupted run resumes where it stopped. It lives in the work folder
// as HASH.journal beside the partial file HASH-RUN.partial (HASH names the
// object's path, RUN the run that made the file): a header that pins the
// object's version and the partial file it describes (the run id in its
// name, its device and inode; its size is the object's), then one
// "OFFSET LENGTH [SUM]" line per part, SUM being the engine's checksum
// token of the part. A part a run was interrupted in has a line for the
// prefix it wrote (LENGTH short of the part's); a later line for the same
// OFFSET replaces an earlier one. Parts are journaled in batches, at most once a
// second, each batch only after the data file was synced: the journal
// never claims bytes that a power loss could take away. A journal whose
// partial file is not the one it describes (replaced, truncated, made by
// another run) is ignored with a warning and removed with the file.
type journal struct {
	workFd int
	name   string // HASH.journal in the work folder
	header string
	f      *os.File // created with the first batch: objects that end first need none

	mu   sync.Mutex
	done map[int64]journaled
	// earlier: the offsets of the parts an earlier run journaled, in
	// order, for the engine's plan (transfer.Extents).
	earlier   []int64
	pending   []journaled
	lastFlush time.Time
}

const journalMagic = "s3pd-journal-3"

// journaled is one part recorded in the journal.
type journaled struct {
	off, n int64
	sum    string
}

func (p journaled) line() string {
	if p.sum == "" {
		return fmt.Sprintf("%d %d\n", p.off, p.n)
	}
	return fmt.Sprintf("%d %d %s\n", p.off, p.n, p.sum)
}

// journalInterval bounds how often a file is synced for its journal.
const journalInterval = time.Second

// binding is the identity of the partial file a journal describes.
type binding struct {
	run      string
	dev, ino uint64
}

func bindingOf(run string, fd int) (binding, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return binding{}, err
	}
	return binding{run: run, dev: st.Dev, ino: st.Ino}, nil
}

// objectHeader is the part of the header that pins the object's version.
func objectHeader(obj transfer.Object) string {
	return fmt.Sprintf("%s\t%d\t%s\t%s\t%s\t%s", journalMagic, obj.Size, strconv.Quote(obj.ETag),
		strconv.Quote(obj.VersionID), strconv.Quote(obj.ChecksumAlgorithm), strconv.Quote(obj.Key))
}

func journalHeader(obj transfer.Object, b binding) string {
	return fmt.Sprintf("%s\t%s\t%d\t%d\n", objectHeader(obj), b.run, b.dev, b.ino)
}

// partialName is the partial file of hash made by run.
func partialName(hash, run string) string { return hash + "-" + run + ".partial" }

func journalName(hash string) string { return hash + ".journal" }

func newJournal(workFd int, hash string, obj transfer.Object, b binding) *journal {
	if obj.ETag == "" && obj.VersionID == "" {
		return nil // nothing pins the version: no resume
	}
	return &journal{workFd: workFd, name: journalName(hash), header: journalHeader(obj, b),
		done: map[int64]journaled{}, lastFlush: time.Now()}
}

// openAt opens name in the work folder as an *os.File.
func (s *Sink) openAt(name string, flags int, mode uint32) (*os.File, error) {
	fd, err := unix.Openat(s.workFd, name, flags|unix.O_CLOEXEC|unix.O_NOFOLLOW, mode)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), WorkDir+"/"+name), nil
}

// errNoJournal: there is no journal to resume from (not a warning).
var errNoJournal = errors.New("no journal")

// resume reopens the partial file and journal of an earlier run of the
// same object version, and returns them with the partial file's name.
// Anything that does not match is removed, with a warning.
func (s *Sink) resume(hash string, obj transfer.Object) (*journal, *os.File, string) {
	j, data, tmp, err := s.reopen(hash, obj)
	if err != nil {
		if !errors.Is(err, errNoJournal) {
			s.warn(fmt.Sprintf("%s: not resuming the interrupted download: %v; fetching it again", obj.Name, err))
		}
		s.forget(hash)
		return nil, nil, ""
	}
	return j, data, tmp
}

func (s *Sink) reopen(hash string, obj transfer.Object) (*journal, *os.File, string, error) {
	jf, err := s.openAt(journalName(hash), unix.O_RDWR, 0)
	if err != nil {
		return nil, nil, "", errNoJournal
	}
	sc := bufio.NewScanner(jf)
	if !sc.Scan() {
		jf.Close()
		return nil, nil, "", errors.New("its journal is empty")
	}
	b, ok := parseBinding(sc.Text(), obj)
	if !ok {
		jf.Close()
		return nil, nil, "", errors.New("the object or its version changed since, or the journal is of another format")
	}
	if obj.ETag == "" && obj.VersionID == "" {
		jf.Close()
		return nil, nil, "", errors.New("nothing pins the object's version")
	}
	j := &journal{workFd: s.workFd, name: journalName(hash), header: journalHeader(obj, b), f: jf, done: map[int64]journaled{}, lastFlush: time.Now()}
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 || len(fields) > 3 {
			break // a torn last line: what came before still holds
		}
		off, err1 := strconv.ParseInt(fields[0], 10, 64)
		n, err2 := strconv.ParseInt(fields[1], 10, 64)
		if err1 != nil || err2 != nil || off < 0 || n <= 0 || off+n > obj.Size {
			break
		}
		p := journaled{off: off, n: n}
		if len(fields) == 3 {
			p.sum = fields[2]
		}
		j.done[off] = p
	}
	j.earlier = slices.Sorted(maps.Keys(j.done))
	tmp := partialName(hash, b.run)
	data, err := s.openAt(tmp, unix.O_RDWR, 0)
	if err != nil {
		jf.Close()
		return nil, nil, "", fmt.Errorf("its partial file is gone (%w)", unwrapPath(err))
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(data.Fd()), &st); err != nil || st.Dev != b.dev || st.Ino != b.ino || st.Size != obj.Size {
		data.Close()
		jf.Close()
		return nil, nil, "", errors.New("its partial file is not the one the journal describes (replaced or resized)")
	}
	// Rewrite the journal so that a torn tail does not hide new lines.
	if err := j.rewrite(); err != nil {
		data.Close()
		jf.Close()
		return nil, nil, "", fmt.Errorf("rewrite its journal: %w", err)
	}
	return j, data, tmp, nil
}

// parseBinding checks a journal's first line against obj and returns the
// partial file it describes.
func parseBinding(line string, obj transfer.Object) (binding, bool) {
	head, ok := strings.CutPrefix(line, objectHeader(obj)+"\t")
	if !ok {
		return binding{}, false
	}
	f := strings.Split(head, "\t")
	if len(f) != 3 || f[0] == "" || strings.ContainsAny(f[0], "/.") {
		return binding{}, false
	}
	dev, err1 := strconv.ParseUint(f[1], 10, 64)
	ino, err2 := strconv.ParseUint(f[2], 10, 64)
	if err1 != nil || err2 != nil {
		return binding{}, false
	}
	return binding{run: f[0], dev: dev, ino: ino}, true
}

// forget removes hash's journal and the partial file it names, if any.
func (s *Sink) forget(hash string) {
	if jf, err := s.openAt(journalName(hash), unix.O_RDONLY, 0); err == nil {
		sc := bufio.NewScanner(jf)
		if sc.Scan() {
			f := strings.Split(sc.Text(), "\t")
			if len(f) >= 3 {
				if run := f[len(f)-3]; run != "" && !strings.ContainsAny(run, "/.") {
					unix.Unlinkat(s.workFd, partialName(hash, run), 0)
				}
			}
		}
		jf.Close()
	}
	unix.Unlinkat(s.workFd, journalName(hash), 0)
}

// sweep removes the partial files of the work folder that no journal
// names (left by a run killed before its first journal batch), and with
// NoResume every journal and partial file. It runs only under the lock
// of the whole destination. It reports whether journals remain.
func (s *Sink) sweep() bool {
	d, err := openDirAt(s.workFd)
	if err != nil {
		return true
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	kept := map[string]bool{}
	for _, n := range names {
		if hash, ok := strings.CutSuffix(n, ".journal"); ok {
			if s.opts.NoResume {
				s.forget(hash)
				continue
			}
			if jf, err := s.openAt(n, unix.O_RDONLY, 0); err == nil {
				sc := bufio.NewScanner(jf)
				if sc.Scan() {
					if f := strings.Split(sc.Text(), "\t"); len(f) >= 3 {
						kept[partialName(hash, f[len(f)-3])] = true
					}
				}
				jf.Close()
			}
		}
	}
	for _, n := range names {
		if strings.HasSuffix(n, ".partial") && !kept[n] {
			unix.Unlinkat(s.workFd, n, 0)
		}
	}
	return len(kept) > 0
}

// hasParts reports whether the journal records a durable part.
func (j *journal) hasParts() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.done) > 0
}

func (j *journal) rewrite() error {
	var b strings.Builder
	b.WriteString(j.header)
	for _, p := range j.done {
		b.WriteString(p.line())
	}
	if err := j.f.Truncate(0); err != nil {
		return err
	}
	if _, err := j.f.WriteAt([]byte(b.String()), 0); err != nil {
		return err
	}
	_, err := j.f.Seek(int64(b.Len()), 0)
	return err
}

// completed returns the bytes journaled of the part [off, off+n): all of
// it, or the prefix a run interrupted in it wrote.
func (j *journal) completed(off, n int64) (int64, string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	p, ok := j.done[off]
	if !ok || p.n > n {
		return 0, ""
	}
	return p.n, p.sum
}

// extent returns the length of the part an earlier run journaled at off
// (0 for none) and the offset of the next one after off (-1 for none).
func (j *journal) extent(off int64) (n, next int64) {
	j.mu.Lock()
	defer j.mu.Unlock()
	next = -1
	if i, _ := slices.BinarySearch(j.earlier, off+1); i < len(j.earlier) {
		next = j.earlier[i]
	}
	if _, ok := slices.BinarySearch(j.earlier, off); ok {
		n = j.done[off].n
	}
	return n, next
}

// add records a finished part, flushing a batch at most once a second.
func (j *journal) add(data *os.File, p journaled) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.pending = append(j.pending, p)
	if time.Since(j.lastFlush) < journalInterval {
		return nil
	}
	return j.flushLocked(data)
}

func (j *journal) flush(data *os.File) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.flushLocked(data)
}

func (j *journal) flushLocked(data *os.File) error {
	j.lastFlush = time.Now()
	if len(j.pending) == 0 {
		return nil
	}
	if err := data.Sync(); err != nil {
		return fmt.Errorf("sync data: %w", err)
	}
	if j.f == nil {
		fd, err := unix.Openat(j.workFd, j.name, unix.O_RDWR|unix.O_CREAT|unix.O_TRUNC|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o666)
		if err != nil {
			return fmt.Errorf("create journal %s/%s: %w", WorkDir, j.name, err)
		}
		f := os.NewFile(uintptr(fd), WorkDir+"/"+j.name)
		if _, err := f.WriteString(j.header); err != nil {
			f.Close()
			return fmt.Errorf("write journal %s/%s: %w", WorkDir, j.name, err)
		}
		j.f = f
	}
	var b strings.Builder
	for _, p := range j.pending {
		b.WriteString(p.line())
		j.done[p.off] = p
	}
	j.pending = j.pending[:0]
	if _, err := j.f.WriteString(b.String()); err != nil {
		return fmt.Errorf("write journal: %w", err)
	}
	return j.f.Sync()
}

func (j *journal) close() {
	if j.f != nil {
		j.f.Close()
	}
}

func (j *journal) remove() {
	if j.f != nil {
		j.f.Close()
		unix.Unlinkat(j.workFd, j.name, 0)
	}
}
