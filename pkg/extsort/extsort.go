// Package extsort sorts records by key in bounded memory: what does not
// fit is written out in sorted runs to unlinked temporary files, and the
// runs are merged as they are read back. It puts the listing of a store
// that does not list in key order (a directory bucket) into order for
// output a reader compares (ls, a dry run).
package extsort

import (
	"bufio"
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// DefaultMemory bounds the records a Sorter holds in memory when New is
// given 0.
const DefaultMemory = 64 << 20

// Sorter gathers records, then hands them back in key order (records of
// the same key in the order they were added). Records are held in memory
// up to a bound, then written to a run; a Sorter is used by one
// goroutine.
type Sorter struct {
	dir   string
	limit int
	held  []record
	bytes int
	runs  []*os.File
	seq   int
}

type record struct {
	key string
	val []byte
	seq int // order of arrival, to keep equal keys stable
}

// New returns a Sorter that holds about memory bytes of records (0:
// DefaultMemory) and writes runs in dir ("": the system's temporary
// directory).
func New(dir string, memory int) *Sorter {
	if memory <= 0 {
		memory = DefaultMemory
	}
	return &Sorter{dir: dir, limit: memory}
}

// Runs is how many runs have been written to disk so far.
func (s *Sorter) Runs() int { return len(s.runs) }

// Add adds one record; val is copied.
func (s *Sorter) Add(key string, val []byte) error {
	s.held = append(s.held, record{key, slices.Clone(val), s.seq})
	s.seq++
	s.bytes += len(key) + len(val) + 64 // 64: the record's own cost
	if s.bytes >= s.limit {
		return s.spill()
	}
	return nil
}

func (s *Sorter) sortHeld() {
	slices.SortFunc(s.held, func(a, b record) int {
		if c := strings.Compare(a.key, b.key); c != 0 {
			return c
		}
		return a.seq - b.seq
	})
}

// spill writes the records held as one sorted run.
func (s *Sorter) spill() error {
	s.sortHeld()
	f, err := os.CreateTemp(s.dir, ".s3pd-sort-*")
	if err != nil {
		return fmt.Errorf("sort the listing: %w", err)
	}
	os.Remove(f.Name())
	s.runs = append(s.runs, f)
	w := bufio.NewWriterSize(f, 1<<20)
	var b []byte
	for _, r := range s.held {
		b = binary.AppendUvarint(b[:0], uint64(len(r.key)))
		b = append(b, r.key...)
		b = binary.AppendUvarint(b, uint64(r.seq))
		b = binary.AppendUvarint(b, uint64(len(r.val)))
		b = append(b, r.val...)
		if _, err := w.Write(b); err != nil {
			return fmt.Errorf("sort the listing: %w", err)
		}
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("sort the listing: %w", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("sort the listing: %w", err)
	}
	clear(s.held)
	s.held, s.bytes = s.held[:0], 0
	return nil
}

// Each calls fn with every record in key order, then releases the runs;
// fn must not keep val.
func (s *Sorter) Each(fn func(key string, val []byte) error) error {
	defer s.Close()
	s.sortHeld()
	h := &merge{}
	if len(s.held) > 0 {
		h.srcs = append(h.srcs, &memRun{recs: s.held})
	}
	for _, f := range s.runs {
		h.srcs = append(h.srcs, &fileRun{r: bufio.NewReaderSize(f, 256<<10)})
	}
	for i := range h.srcs {
		ok, err := h.srcs[i].next()
		if err != nil {
			return err
		}
		if ok {
			h.live = append(h.live, h.srcs[i])
		}
	}
	heap.Init(h)
	for h.Len() > 0 {
		top := h.live[0]
		r := top.cur()
		if err := fn(r.key, r.val); err != nil {
			return err
		}
		ok, err := top.next()
		if err != nil {
			return err
		}
		if ok {
			heap.Fix(h, 0)
		} else {
			heap.Pop(h)
		}
	}
	return nil
}

// Close releases the runs; Each closes them itself.
func (s *Sorter) Close() error {
	var errs []error
	for _, f := range s.runs {
		errs = append(errs, f.Close())
	}
	s.runs, s.held = nil, nil
	return errors.Join(errs...)
}

// run is one sorted source of records.
type run interface {
	next() (bool, error)
	cur() *record
}

type memRun struct {
	recs []record
	i    int
}

func (m *memRun) next() (bool, error) {
	if m.i >= len(m.recs) {
		return false, nil
	}
	m.i++
	return true, nil
}
func (m *memRun) cur() *record { return &m.recs[m.i-1] }

type fileRun struct {
	r   *bufio.Reader
	rec record
}

func (f *fileRun) next() (bool, error) {
	n, err := binary.ReadUvarint(f.r)
	if err == io.EOF {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("sort the listing: read a run: %w", err)
	}
	key := make([]byte, n)
	if _, err := io.ReadFull(f.r, key); err != nil {
		return false, fmt.Errorf("sort the listing: read a run: %w", err)
	}
	seq, err := binary.ReadUvarint(f.r)
	if err != nil {
		return false, fmt.Errorf("sort the listing: read a run: %w", err)
	}
	n, err = binary.ReadUvarint(f.r)
	if err != nil {
		return false, fmt.Errorf("sort the listing: read a run: %w", err)
	}
	if cap(f.rec.val) < int(n) {
		f.rec.val = make([]byte, n)
	}
	f.rec.val = f.rec.val[:n]
	if _, err := io.ReadFull(f.r, f.rec.val); err != nil {
		return false, fmt.Errorf("sort the listing: read a run: %w", err)
	}
	f.rec.key, f.rec.seq = string(key), int(seq)
	return true, nil
}
func (f *fileRun) cur() *record { return &f.rec }

// merge is a heap of the runs not yet exhausted, by their current record.
type merge struct {
	srcs, live []run
}

func (h *merge) Len() int { return len(h.live) }
func (h *merge) Less(i, j int) bool {
	a, b := h.live[i].cur(), h.live[j].cur()
	if a.key != b.key {
		return a.key < b.key
	}
	return a.seq < b.seq
}
func (h *merge) Swap(i, j int) { h.live[i], h.live[j] = h.live[j], h.live[i] }
func (h *merge) Push(x any)    { h.live = append(h.live, x.(run)) }
func (h *merge) Pop() any {
	x := h.live[len(h.live)-1]
	h.live = h.live[:len(h.live)-1]
	return x
}
