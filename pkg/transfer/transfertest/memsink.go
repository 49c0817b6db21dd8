package transfertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash"
	"io"
	"maps"
	"sync"
	"sync/atomic"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// Sink is an in-memory destination for tests of the engine. What Create
// returns depends on its fields, set before a run: a plain File by
// default, a transfer.Journal with Journal, a transfer.PartWriter with
// Parts. Every file is an io.ReaderAt. A Sink is one destination across
// runs: a journal suspended by one run is found by the next.
type Sink struct {
	// Journal makes files remember durable parts across runs.
	Journal bool
	// Parts makes files take whole parts (transfer.PartWriter); a part
	// whose body is a Ref is copied from the Ref's source.
	Parts bool
	// Unreadable hides that files are io.ReaderAt.
	Unreadable bool
	// Stage, when above 0, makes files lend stages of that many bytes
	// (transfer.Stager), with or without Journal: bytes reach the file
	// only when a stage is full or closed.
	Stage int
	// Stream makes files streams (transfer.Stream, not io.ReaderAt) that
	// sum their bytes in order as the ranges before them arrive.
	Stream bool

	mu        sync.Mutex
	committed map[string]Committed
	journals  map[string]*saved
	creates   atomic.Int64
	aborts    atomic.Int64
	suspends  atomic.Int64
	stages    atomic.Int64
}

// Committed is an object visible at the destination.
type Committed struct {
	Object transfer.Object
	Data   []byte
}

// saved is what a suspended file left for the next run.
type saved struct {
	etag  string
	data  []byte
	parts map[int64]journaled
}

type journaled struct {
	n   int64
	sum string
}

// NewSink returns an empty destination.
func NewSink() *Sink {
	return &Sink{committed: map[string]Committed{}, journals: map[string]*saved{}}
}

// Committed returns the objects visible at the destination, by name.
func (s *Sink) Committed() map[string]Committed {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.committed)
}

// Put makes an object visible at the destination, as an earlier run
// would have left it.
func (s *Sink) Put(o transfer.Object, data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.committed[o.Name] = Committed{Object: o, Data: data}
}

// Creates, Aborts and Suspends count the calls made so far.
func (s *Sink) Creates() int64  { return s.creates.Load() }
func (s *Sink) Aborts() int64   { return s.aborts.Load() }
func (s *Sink) Suspends() int64 { return s.suspends.Load() }

// Journaled returns the parts (offset: length) a suspended file of name
// left, and whether there is one.
func (s *Sink) Journaled(name string) (map[int64]int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.journals[name]
	if !ok {
		return nil, false
	}
	parts := map[int64]int64{}
	for off, p := range j.parts {
		parts[off] = p.n
	}
	return parts, true
}

// Damage overwrites byte off of what a suspended file of name left.
func (s *Sink) Damage(name string, off int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if j, ok := s.journals[name]; ok {
		j.data[off] ^= 0xff
	}
}

// Create implements transfer.Sink.
func (s *Sink) Create(_ context.Context, o transfer.Object) (transfer.File, error) {
	s.creates.Add(1)
	f := &file{sink: s, obj: o, data: make([]byte, o.Size), parts: map[int64]journaled{}}
	if s.Journal {
		s.mu.Lock()
		if j, ok := s.journals[o.Name]; ok && j.etag == o.ETag && o.ETag != "" && int64(len(j.data)) == o.Size {
			copy(f.data, j.data)
			f.earlier = j.parts
		}
		delete(s.journals, o.Name)
		s.mu.Unlock()
	}
	switch {
	case s.Stage > 0 && s.Journal:
		return &stagedJournal{&journalFile{f}, stager{f, s.Stage}}, nil
	case s.Stage > 0:
		return &stagedFile{f, stager{f, s.Stage}}, nil
	case s.Journal:
		return &journalFile{f}, nil
	case s.Parts:
		return &partFile{f}, nil
	case s.Unreadable:
		return unreadable{f}, nil
	case s.Stream:
		return &stream{f: f, written: map[int64]int64{}}, nil
	}
	return f, nil
}

// The files and sinks implement what they stand in for; a change of an
// interface fails here, not as a test that quietly stops covering it.
var (
	_ transfer.Journal    = (*journalFile)(nil)
	_ transfer.PartWriter = (*partFile)(nil)
	_ transfer.Stager     = (*stagedFile)(nil)
	_ transfer.Journal    = (*stagedJournal)(nil)
	_ transfer.Stager     = (*stagedJournal)(nil)
	_ transfer.Stream     = (*stream)(nil)
	_ io.ReaderAt         = (*file)(nil)
	_ transfer.Checker    = CheckSink{}
	_ transfer.Existing   = CheckSink{}
)

// file is a destination being written.
type file struct {
	sink    *Sink
	obj     transfer.Object
	mu      sync.Mutex
	data    []byte
	parts   map[int64]journaled // PartDone in this run
	earlier map[int64]journaled // left by an earlier run
	ended   bool
}

// WriteAt implements io.WriterAt.
func (f *file) WriteAt(p []byte, off int64) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ended {
		return 0, errors.New("transfertest: write after the file ended")
	}
	if off < 0 || off+int64(len(p)) > int64(len(f.data)) {
		return 0, fmt.Errorf("transfertest: write %d+%d beyond the object's %d bytes", off, len(p), len(f.data))
	}
	return copy(f.data[off:], p), nil
}

// ReadAt implements io.ReaderAt.
func (f *file) ReadAt(p []byte, off int64) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if off >= int64(len(f.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// Commit implements transfer.File.
func (f *file) Commit() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ended {
		return errors.New("transfertest: commit after the file ended")
	}
	f.ended = true
	f.sink.Put(f.obj, bytes.Clone(f.data))
	return nil
}

// Abort implements transfer.File.
func (f *file) Abort() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.ended {
		f.ended = true
		f.sink.aborts.Add(1)
	}
	return nil
}

// journalFile is a file that is a transfer.Journal.
type journalFile struct{ *file }

// Completed implements transfer.Journal: the bytes of the part, all or
// a prefix, that an earlier run journaled.
func (f *journalFile) Completed(off, n int64) (int64, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.earlier[off]
	if !ok || p.n > n {
		return 0, ""
	}
	return p.n, p.sum
}

// Extent implements transfer.Extents: the extent an earlier run
// journaled at off, and where the next one begins.
func (f *journalFile) Extent(off int64) (n, next int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	next = -1
	for o := range f.earlier {
		if o > off && (next < 0 || o < next) {
			next = o
		}
	}
	return f.earlier[off].n, next
}

// PartDone implements transfer.Journal; a later call at the same off
// (the whole part after a prefix) replaces the earlier one.
func (f *journalFile) PartDone(off, n int64, sum string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.parts[off] = journaled{n: n, sum: sum}
	return nil
}

// Suspend implements transfer.Journal: the parts done, this run's and
// the earlier runs' that it took, stay for the next run.
func (f *journalFile) Suspend() (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ended {
		return false, nil
	}
	f.ended = true
	f.sink.suspends.Add(1)
	parts := maps.Clone(f.parts)
	f.sink.mu.Lock()
	f.sink.journals[f.obj.Name] = &saved{etag: f.obj.ETag, data: bytes.Clone(f.data), parts: parts}
	f.sink.mu.Unlock()
	return len(parts) > 0, nil
}

// Stages counts the stages files lent (transfer.Stager).
func (s *Sink) Stages() int64 { return s.stages.Load() }

// stager lends a file's stages of size bytes.
type stager struct {
	f    *file
	size int
}

// Stage implements transfer.Stager.
func (s stager) Stage(off, n int64) (transfer.Stage, error) {
	s.f.sink.stages.Add(1)
	return &stage{f: s.f, off: off, buf: make([]byte, 0, s.size)}, nil
}

// stagedFile is a file that is a transfer.Stager.
type stagedFile struct {
	*file
	stager
}

// stagedJournal is a journalFile that is a transfer.Stager.
type stagedJournal struct {
	*journalFile
	stager
}

// stage holds the bytes from off until its buffer is full or it closes.
type stage struct {
	f      *file
	off    int64
	buf    []byte
	closed bool
}

func (s *stage) Next() []byte { return s.buf[len(s.buf):cap(s.buf)] }

func (s *stage) Wrote(k int) error {
	if s.closed || k <= 0 || len(s.buf)+k > cap(s.buf) {
		return fmt.Errorf("transfertest: Wrote(%d) with %d of %d bytes staged (closed %v)", k, len(s.buf), cap(s.buf), s.closed)
	}
	s.buf = s.buf[:len(s.buf)+k]
	if len(s.buf) < cap(s.buf) {
		return nil
	}
	return s.flush()
}

func (s *stage) flush() error {
	if _, err := s.f.WriteAt(s.buf, s.off); err != nil {
		return err
	}
	s.off += int64(len(s.buf))
	s.buf = s.buf[:0]
	return nil
}

func (s *stage) Close() error {
	if s.closed {
		return errors.New("transfertest: stage closed twice")
	}
	s.closed = true
	return s.flush()
}

// partFile is a file that is a transfer.PartWriter.
type partFile struct{ *file }

// WritePart implements transfer.PartWriter: it reads the whole part, or
// copies it from the source of a Ref, and writes it only when it is
// whole.
func (f *partFile) WritePart(ctx context.Context, off, n int64, body *transfer.Body, progress func(int64)) (int64, error) {
	var part []byte
	if ref, ok := body.ReadCloser.(*Ref); ok {
		data := ref.Source.Data(ref.Key)
		if off+n > int64(len(data)) {
			return 0, transfer.Permanent(fmt.Errorf("copy %s %d+%d: beyond its %d bytes", ref.Key, off, n, len(data)))
		}
		part = data[off : off+n]
	} else {
		part = make([]byte, n)
		k, err := io.ReadFull(body, part)
		if err != nil {
			progress(int64(k))
			return 0, &transfer.ShortBodyError{Got: int64(k), Want: n}
		}
	}
	for i := int64(0); i < n; i += 4 << 10 {
		progress(min(4<<10, n-i))
	}
	if _, err := f.WriteAt(part, off); err != nil {
		return 0, err
	}
	return n, ctx.Err()
}

// unreadable is a file that is not an io.ReaderAt.
type unreadable struct{ f *file }

func (u unreadable) WriteAt(p []byte, off int64) (int, error) { return u.f.WriteAt(p, off) }
func (u unreadable) Commit() error                            { return u.f.Commit() }
func (u unreadable) Abort() error                             { return u.f.Abort() }

// stream is a file that passes its bytes on in order: each range waits
// (in the file) for those before it, then goes into the sum.
type stream struct {
	f       *file
	mu      sync.Mutex
	sum     hash.Hash
	pos     int64           // bytes passed on
	written map[int64]int64 // offset -> length of ranges ahead of pos
}

func (s *stream) WriteAt(p []byte, off int64) (int, error) {
	n, err := s.f.WriteAt(p, off)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.written[off] = int64(n)
	for {
		k, ok := s.written[s.pos]
		if !ok {
			break
		}
		delete(s.written, s.pos)
		if s.sum != nil {
			s.f.mu.Lock()
			s.sum.Write(s.f.data[s.pos : s.pos+k])
			s.f.mu.Unlock()
		}
		s.pos += k
	}
	return n, err
}

func (s *stream) Commit() error { return s.f.Commit() }
func (s *stream) Abort() error  { return s.f.Abort() }

// SumWritten implements transfer.Stream.
func (s *stream) SumWritten(h hash.Hash) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sum = h
}

// StreamName implements transfer.Stream.
func (s *stream) StreamName() string { return "the stream" }

// CheckSink is a Sink that is a transfer.Checker and transfer.Existing:
// an object already committed with the same size and ETag is skipped as
// unchanged, and its bytes are handed back for Options.VerifyExisting.
type CheckSink struct{ *Sink }

// Check implements transfer.Checker.
func (c CheckSink) Check(o transfer.Object) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if have, ok := c.committed[o.Name]; ok && have.Object.Size == o.Size && have.Object.ETag == o.ETag {
		return &transfer.SkipError{Reason: "unchanged"}
	}
	return nil
}

// OpenExisting implements transfer.Existing.
func (c CheckSink) OpenExisting(o transfer.Object) (io.ReadCloser, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	have, ok := c.committed[o.Name]
	if !ok {
		return nil, fmt.Errorf("transfertest: nothing at %s", o.Name)
	}
	return io.NopCloser(bytes.NewReader(have.Data)), nil
}

// Damage flips byte off of the committed object name.
func (c CheckSink) Damage(name string, off int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.committed[name].Data[off] ^= 0xff
}
