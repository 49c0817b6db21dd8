package local

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// journal records the parts of a partial file that are durable, so an
// interrupted run resumes where it stopped. It lives beside the partial
// file as NAME.journal: a header that pins the object's version, then one
// "OFFSET LENGTH [SUM]" line per part, SUM being the engine's checksum
// token of the part. Parts are journaled in batches, at most
// once a second, each batch only after the data file was synced: the
// journal never claims bytes that a power loss could take away.
type journal struct {
	root   *os.Root
	name   string
	header string
	f      *os.File // created with the first batch: objects that end first need none

	mu        sync.Mutex
	done      map[int64]journaled
	pending   []journaled
	lastFlush time.Time
}

const journalMagic = "s3pd-journal-2"

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

func journalHeader(obj transfer.Object) string {
	return fmt.Sprintf("%s\t%d\t%s\t%s\t%s\t%s\n", journalMagic, obj.Size, strconv.Quote(obj.ETag),
		strconv.Quote(obj.VersionID), strconv.Quote(obj.ChecksumAlgorithm), strconv.Quote(obj.Key))
}

func newJournal(root *os.Root, tmp string, obj transfer.Object) (*journal, error) {
	if obj.ETag == "" && obj.VersionID == "" {
		return nil, nil // nothing pins the version: no resume
	}
	return &journal{root: root, name: tmp + ".journal", header: journalHeader(obj),
		done: map[int64]journaled{}, lastFlush: time.Now()}, nil
}

// resume reopens the partial file and journal of an earlier run of the
// same object version. Anything that does not match is removed.
func (s *Sink) resume(tmp string, obj transfer.Object) (*journal, *os.File) {
	name := tmp + ".journal"
	jf, err := s.root.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return nil, nil
	}
	j := &journal{root: s.root, name: name, header: journalHeader(obj), f: jf, done: map[int64]journaled{}, lastFlush: time.Now()}
	sc := bufio.NewScanner(jf)
	ok := sc.Scan() && sc.Text()+"\n" == journalHeader(obj) && (obj.ETag != "" || obj.VersionID != "")
	for ok && sc.Scan() {
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
	var data *os.File
	if ok {
		data, err = s.root.OpenFile(tmp, os.O_RDWR, 0)
		if err == nil {
			if st, serr := data.Stat(); serr != nil || st.Size() != obj.Size {
				data.Close()
				data, ok = nil, false
			}
		} else {
			ok = false
		}
	}
	if !ok {
		jf.Close()
		s.root.Remove(name)
		s.root.Remove(tmp)
		return nil, nil
	}
	// Rewrite the journal so that a torn tail does not hide new lines.
	if err := j.rewrite(obj); err != nil {
		data.Close()
		jf.Close()
		return nil, nil
	}
	return j, data
}

func (j *journal) rewrite(obj transfer.Object) error {
	var b strings.Builder
	b.WriteString(journalHeader(obj))
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

func (j *journal) completed(off, n int64) (string, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	p, ok := j.done[off]
	return p.sum, ok && p.n == n
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
		f, err := j.root.OpenFile(j.name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
		if err != nil {
			return fmt.Errorf("create journal %s: %w", j.name, unwrapPath(err))
		}
		if _, err := f.WriteString(j.header); err != nil {
			f.Close()
			return fmt.Errorf("write journal %s: %w", j.name, err)
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
		j.root.Remove(j.name)
	}
}
