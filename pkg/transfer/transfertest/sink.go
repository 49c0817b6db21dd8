package transfertest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// Target is one destination under test. Sinks opened over it share it, as
// two runs of s3pd share a directory or a bucket. What else a Target
// implements says what the suite can look at: a Reader shows what is
// visible at a name, an Inventory everything the destination holds. A
// destination that keeps nothing (a benchmark's discard) is neither, and
// the clauses that look skip themselves.
type Target interface {
	// Sink opens a sink over the destination, first ending the one it
	// opened before (as a run ends), if any.
	Sink(t testing.TB) transfer.Sink
}

// Reader is a Target whose objects can be read back.
type Reader interface {
	Target
	// Read returns the object visible at name, and whether there is one.
	Read(t testing.TB, name string) ([]byte, bool)
}

// Inventory is a Target that lists everything it holds (a stream, say
// stdout, holds no names).
type Inventory interface {
	Target
	// Names ends the open sink and lists everything the destination
	// holds: committed objects by name, and anything else (a partial
	// file, a journal, a pending upload) by a name that says what it is.
	Names(t testing.TB) []string
}

// WholePutter is a Target whose store makes an object visible with the
// one request that writes it whole, as S3's PutObject and CopyObject do
// for an object below the sink's Threshold: for such an object Commit has
// nothing left to do and Abort cannot take it back. No value of the
// sink's shows this (one file type takes both that request and a
// multipart upload), so the destination declares it; the suite then
// checks that such an object is visible, whole, once its one part is
// written, and holds the other objects to the rest of the contract.
type WholePutter interface {
	Reader
	PutsWholeAtOnce()
}

// SinkSuite is the contract every Sink keeps, one method per clause. An
// adapter's test fills in NewTarget (and what else its sink needs) and
// calls Run.
type SinkSuite struct {
	// NewTarget returns a fresh, empty destination.
	NewTarget func(t *testing.T) Target
	// PartSize and Threshold are the engine's, which the sink was built
	// for (an upload numbers its parts by them); default 64 KiB each.
	PartSize, Threshold int64
	// Object, when set, makes the object the suite writes, with data as
	// its content, as a source would list it: a sink that reads the
	// source itself (a copy) needs it there. The default is an object
	// with a made-up ETag.
	Object func(t testing.TB, name string, data []byte, modTime time.Time) transfer.Object
	// PartBody, when set, returns the body a PartWriter file of this sink
	// takes for bytes [off, off+n) of obj (a file to copy from, a
	// reference to copy server-side). The default is a plain reader. It
	// is called from several goroutines: it reports a failure with
	// t.Error and a body that fails, not with t.Fatal.
	PartBody func(t testing.TB, obj transfer.Object, data []byte, off, n int64) *transfer.Body
}

// Run runs every clause of the contract as a subtest of t.
func (s *SinkSuite) Run(t *testing.T) {
	t.Helper()
	c := *s
	if c.PartSize <= 0 {
		c.PartSize = 64 << 10
	}
	if c.Threshold <= 0 {
		c.Threshold = c.PartSize
	}
	if c.Object == nil {
		c.Object = func(_ testing.TB, name string, data []byte, modTime time.Time) transfer.Object {
			return transfer.Object{Key: name, Name: name, Size: int64(len(data)), ModTime: modTime,
				ETag: fmt.Sprintf(`"%x"`, Data(name+modTime.String(), 8))}
		}
	}
	if c.PartBody == nil {
		c.PartBody = func(_ testing.TB, _ transfer.Object, data []byte, off, n int64) *transfer.Body {
			return bodyOf(data, off, n)
		}
	}
	runClauses(t, &c)
}

// TestWriteThenCommit: every sink takes parallel non-overlapping writes
// of an object (WriteAt, a Stager's stages, or WritePart for a
// PartWriter), and Commit then succeeds.
func (s *SinkSuite) TestWriteThenCommit(t *testing.T) {
	s.eachSize(t, func(t *testing.T, size int64) {
		s.commitNew(t, s.NewTarget(t).Sink(t), fmt.Sprintf("d/obj-%d", size), size)
	})
}

// TestCommitMakesVisible: after Commit, exactly the bytes written are
// visible at the object's name.
func (s *SinkSuite) TestCommitMakesVisible(t *testing.T) {
	readerOf(t, s.NewTarget(t)) // skip at once, not once per size
	s.eachSize(t, func(t *testing.T, size int64) {
		tg := s.NewTarget(t)
		r := readerOf(t, tg)
		obj, data := s.commitNew(t, tg.Sink(t), fmt.Sprintf("d/obj-%d", size), size)
		wantRead(t, r, obj.Name, data, "after Commit")
	})
}

// TestNothingVisibleBeforeCommit: written but not committed, an object is
// not visible at its name.
func (s *SinkSuite) TestNothingVisibleBeforeCommit(t *testing.T) {
	readerOf(t, s.NewTarget(t)) // skip at once, not once per size
	s.eachSize(t, func(t *testing.T, size int64) {
		tg := s.NewTarget(t)
		r := readerOf(t, tg)
		if s.putsWhole(tg, size) {
			t.Skip("the store makes an object this small visible with the one request that writes it")
		}
		obj, data := s.sample(t, fmt.Sprintf("d/obj-%d", size), size)
		f := create(t, tg.Sink(t), obj)
		notStream(t, f, "its bytes appear as they arrive")
		defer abort(t, f)
		s.write(t, f, obj, data)
		if _, ok := r.Read(t, obj.Name); ok {
			t.Fatalf("%s is visible before Commit", obj.Name)
		}
	})
}

// TestCommitLeavesOnlyTheObject: once an object is committed the
// destination holds it and nothing else (no partial file, journal or
// pending upload).
func (s *SinkSuite) TestCommitLeavesOnlyTheObject(t *testing.T) {
	inventoryOf(t, s.NewTarget(t)) // skip at once, not once per size
	s.eachSize(t, func(t *testing.T, size int64) {
		tg := s.NewTarget(t)
		inv := inventoryOf(t, tg)
		obj, _ := s.commitNew(t, tg.Sink(t), fmt.Sprintf("d/obj-%d", size), size)
		wantNames(t, inv, obj.Name)
	})
}

// TestPutVisibleAtOnce: at a destination that puts a small object whole
// in one request (WholePutter), the object is visible, whole, as soon as
// its one part is written, and Commit keeps it.
func (s *SinkSuite) TestPutVisibleAtOnce(t *testing.T) {
	tg := s.NewTarget(t)
	if _, ok := tg.(WholePutter); !ok {
		t.Skip("the destination is no WholePutter: nothing is visible before Commit")
	}
	sk := tg.Sink(t)
	for _, size := range []int64{1, s.Threshold - 1} {
		obj, data := s.sample(t, fmt.Sprintf("d/put-%d", size), size)
		f := create(t, sk, obj)
		s.write(t, f, obj, data)
		wantRead(t, tg.(Reader), obj.Name, data, "once its one part is written")
		if err := f.Commit(); err != nil {
			t.Fatalf("Commit: %v", err)
		}
		wantRead(t, tg.(Reader), obj.Name, data, "after Commit")
	}
}

// TestAbort: every sink's Abort of a partly written file succeeds.
func (s *SinkSuite) TestAbort(t *testing.T) {
	for _, size := range []int64{1, 3*s.PartSize + 5} {
		t.Run(strconv.FormatInt(size, 10), func(t *testing.T) {
			sk := s.NewTarget(t).Sink(t)
			obj, data := s.sample(t, fmt.Sprintf("aborted-%d", size), size)
			f := create(t, sk, obj)
			s.writeParts(t, f, obj, data, someParts(f))
			if err := f.Abort(); err != nil {
				t.Fatalf("Abort: %v", err)
			}
		})
	}
}

// TestAbortLeavesNothing: Abort takes back what was written: nothing is
// visible at the object's name, and nothing stays at the destination.
// One sink takes both objects, as one run does.
func (s *SinkSuite) TestAbortLeavesNothing(t *testing.T) {
	tg := s.NewTarget(t)
	r := readerOf(t, tg)
	sk := tg.Sink(t)
	for _, size := range []int64{1, 3*s.PartSize + 5} {
		if s.putsWhole(tg, size) {
			continue // visible with its one request, which Abort cannot take back
		}
		obj, data := s.sample(t, fmt.Sprintf("aborted-%d", size), size)
		f := create(t, sk, obj)
		notStream(t, f, "its bytes are out as they arrive, and Abort cannot take them back")
		s.writeParts(t, f, obj, data, someParts(f))
		if err := f.Abort(); err != nil {
			t.Fatalf("Abort: %v", err)
		}
		if _, ok := r.Read(t, obj.Name); ok {
			t.Fatalf("%s is visible after Abort", obj.Name)
		}
	}
	if inv, ok := tg.(Inventory); ok {
		wantNames(t, inv)
	}
}

// TestPartWriterAllOrNothing: a PartWriter part is written whole or not
// at all: a part whose body breaks half way fails, and is written whole
// when sent again.
func (s *SinkSuite) TestPartWriterAllOrNothing(t *testing.T) {
	tg := s.NewTarget(t)
	obj, data := s.sample(t, "retried", 3*s.PartSize+5)
	f := create(t, tg.Sink(t), obj)
	pw, ok := f.(transfer.PartWriter)
	if !ok {
		abort(t, f)
		t.Skip("the sink's files take WriteAt, not whole parts (no PartWriter)")
	}
	off, n := s.PartSize, s.PartSize
	broken := &transfer.Body{ReadCloser: io.NopCloser(io.MultiReader(bytes.NewReader(data[off:off+n/2]), errReader{})),
		Off: off, Len: n, Size: obj.Size}
	if _, err := pw.WritePart(context.Background(), off, n, broken, func(int64) {}); err == nil {
		t.Fatalf("WritePart of a body that breaks half way: no error")
	}
	s.write(t, f, obj, data) // every part, the broken one again
	if err := f.Commit(); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if r, ok := tg.(Reader); ok {
		wantRead(t, r, obj.Name, data, "after a part was sent again")
	}
}

// TestJournalRoundTrips: a Journal remembers the parts a run made
// durable, with their sums, for the next run of the same object version,
// which reads their bytes back (the file is an io.ReaderAt), writes only
// the rest, and commits the whole object, leaving nothing else.
func (s *SinkSuite) TestJournalRoundTrips(t *testing.T) {
	tg := s.NewTarget(t)
	r := readerOf(t, tg)
	done := func(i int) bool { return i == 0 || i == 2 }
	data, obj := s.suspended(t, tg, "resumed", done)
	f := create(t, tg.Sink(t), obj)
	j, ok := f.(transfer.Journal)
	if !ok {
		t.Fatalf("the second run's file keeps no journal")
	}
	s.wantResumable(t, f, j, obj, data, done)
	s.writeParts(t, f, obj, data, func(i int) bool { return !done(i) })
	if err := f.Commit(); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	wantRead(t, r, obj.Name, data, "resumed object")
	if inv, ok := tg.(Inventory); ok {
		wantNames(t, inv, obj.Name)
	}
}

// TestJournalForgetsOtherVersions: a Journal resumes no part for another
// version of the object (same name, other content and time).
func (s *SinkSuite) TestJournalForgetsOtherVersions(t *testing.T) {
	tg := s.NewTarget(t)
	const name = "replaced"
	data, obj := s.suspended(t, tg, name, func(int) bool { return true })
	other := pinned(s.Object(t, name, Data("other", len(data)), when.Add(time.Hour)))
	f := create(t, tg.Sink(t), other)
	defer abort(t, f)
	j, ok := f.(transfer.Journal)
	if !ok {
		return // no journal at all: nothing is resumed
	}
	for _, off := range s.offsets(obj.Size) {
		if have, _ := j.Completed(off, s.partLen(obj.Size, off)); have != 0 {
			t.Fatalf("another version of the object resumes the part at %d", off)
		}
	}
}

// TestSkipsUnchanged: a later run skips an object already there and
// unchanged (the sink's Checker, or Create with a skip reason).
func (s *SinkSuite) TestSkipsUnchanged(t *testing.T) {
	tg, obj := s.kept(t)
	if why := skipped(t, tg.Sink(t), obj); why == "" {
		t.Errorf("an object already there and unchanged is not skipped")
	}
}

// TestTransfersChanged: a later run skips no object that changed: not one
// whose size changed, nor one rewritten later with the same size.
func (s *SinkSuite) TestTransfersChanged(t *testing.T) {
	tg, obj := s.kept(t)
	sk := tg.Sink(t) // a second run
	longer := s.Object(t, obj.Name, Data(obj.Name, int(obj.Size)+1), when)
	if why := skipped(t, sk, longer); why != "" {
		t.Errorf("an object whose size changed is skipped: %s", why)
	}
	rewritten := s.Object(t, obj.Name, Data("rewritten", int(obj.Size)), when.Add(time.Hour))
	if why := skipped(t, sk, rewritten); why != "" {
		t.Errorf("an object rewritten with the same size is skipped: %s", why)
	}
}

// kept is a first run, at a fresh destination, that commits an object of
// 1000 bytes for a later run to find; it returns the destination and the
// object. The test is skipped when nothing stays for a later run.
func (s *SinkSuite) kept(t *testing.T) (Target, transfer.Object) {
	t.Helper()
	tg := s.NewTarget(t)
	readerOf(t, tg)
	obj, data := s.sample(t, "kept", 1000)
	f := create(t, tg.Sink(t), obj)
	notStream(t, f, "nothing stays for a later run to skip")
	s.write(t, f, obj, data)
	if err := f.Commit(); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	return tg, obj
}

// wantResumable checks what the next run's file f finds of the parts an
// earlier run journaled (those done picks, part i with the sum "sum-i"):
// each whole, with its sum, and its bytes read back; the others not at
// all.
func (s *SinkSuite) wantResumable(t *testing.T, f transfer.File, j transfer.Journal, obj transfer.Object, data []byte, done func(i int) bool) {
	t.Helper()
	ra, readable := f.(io.ReaderAt)
	if !readable {
		t.Errorf("a journaled file is not an io.ReaderAt: the engine cannot check what it resumes")
	}
	for i, off := range s.offsets(obj.Size) {
		n := s.partLen(obj.Size, off)
		have, sum := j.Completed(off, n)
		switch {
		case done(i) && (have != n || sum != fmt.Sprint("sum-", i)):
			t.Errorf("part %d: Completed = %d, %q; want %d, %q", i, have, sum, n, fmt.Sprint("sum-", i))
		case !done(i) && have != 0:
			t.Errorf("part %d: Completed = %d, %q; want nothing", i, have, sum)
		case done(i) && readable:
			got := make([]byte, n)
			if _, err := ra.ReadAt(got, off); err != nil || !bytes.Equal(got, data[off:off+n]) {
				t.Errorf("part %d read back: %v, or bytes that differ", i, err)
			}
		}
	}
}

// someParts picks the parts of a file written in part: every other one,
// or for a file with an OrderWindow (a stream) only the first, since the
// engine starts no range beyond the window and a write there would wait
// for bytes that never come.
func someParts(f transfer.File) func(i int) bool {
	if _, ok := f.(transfer.OrderWindow); ok {
		return func(i int) bool { return i == 0 }
	}
	return func(i int) bool { return i%2 == 0 }
}

// eachSize runs clause as a subtest for each size of object the suite
// writes: empty, one byte, one below Threshold, and parts and a bit.
func (s *SinkSuite) eachSize(t *testing.T, clause func(t *testing.T, size int64)) {
	t.Helper()
	for _, size := range []int64{0, 1, s.Threshold - 1, 3*s.PartSize + 5} {
		t.Run(strconv.FormatInt(size, 10), func(t *testing.T) { clause(t, size) })
	}
}

// putsWhole says an object of size is visible at tg as soon as its one
// part is written.
func (s *SinkSuite) putsWhole(tg Target, size int64) bool {
	_, ok := tg.(WholePutter)
	return ok && size > 0 && size < s.Threshold
}

// readerOf returns tg as a Reader, or skips the test.
func readerOf(t *testing.T, tg Target) Reader {
	t.Helper()
	r, ok := tg.(Reader)
	if !ok {
		t.Skip("the destination keeps nothing to read back (no Reader)")
	}
	return r
}

// inventoryOf returns tg as an Inventory, or skips the test.
func inventoryOf(t *testing.T, tg Target) Inventory {
	t.Helper()
	inv, ok := tg.(Inventory)
	if !ok {
		t.Skip("the destination holds no names to list (no Inventory)")
	}
	return inv
}

// notStream skips the test, first aborting f, when f is a stream; why
// says what a stream cannot keep.
func notStream(t *testing.T, f transfer.File, why string) {
	t.Helper()
	if _, ok := f.(transfer.Stream); ok {
		abort(t, f)
		t.Skip("the sink is a stream: " + why)
	}
}

// wantRead fails the test unless exactly data is visible at name; moment
// says when.
func wantRead(t *testing.T, r Reader, name string, data []byte, moment string) {
	t.Helper()
	if got, ok := r.Read(t, name); !ok || !bytes.Equal(got, data) {
		t.Fatalf("%s: %d bytes at %s (there: %v) that differ, want the %d written", moment, len(got), name, ok, len(data))
	}
}

// wantNames fails the test unless the destination holds exactly names.
func wantNames(t *testing.T, inv Inventory, names ...string) {
	t.Helper()
	if got := inv.Names(t); !slices.Equal(got, names) {
		t.Fatalf("the destination holds %q, want %q", got, names)
	}
}
