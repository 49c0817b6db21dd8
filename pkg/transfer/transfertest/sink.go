// Package transfertest holds what tests of the engine and of its adapters
// share: one contract suite that every Sink and every Source runs from its
// own package's tests (TestSink, TestSource), and small in-memory adapters
// with each optional interface, for tests of the engine itself.
package transfertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// Target is one destination under test. Sinks opened over it share it, as
// two runs of s3pd share a directory or a bucket.
type Target interface {
	// Sink opens a sink over the destination, first ending the one it
	// opened before (as a run ends), if any.
	Sink(t testing.TB) transfer.Sink
	// Read returns the object visible at name, and whether there is one.
	Read(t testing.TB, name string) ([]byte, bool)
	// Names ends the open sink and lists everything the destination
	// holds: committed objects by name, and anything else (a partial
	// file, a journal, a pending upload) by a name that says what it is.
	Names(t testing.TB) []string
}

// SinkSuite describes a sink for TestSink.
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
	// Stream says the destination is a stream: bytes appear in order as
	// they arrive, Abort cannot take them back, one sink takes one object
	// and nothing is there for a later run to skip.
	Stream bool
	// PutsSmallAtOnce says an object below Threshold is written by the
	// one request of its one part (S3's PutObject or CopyObject), which
	// makes it visible at once: Commit has nothing left to do, and Abort
	// cannot take it back. Only larger objects are checked for that.
	PutsSmallAtOnce bool
	// NeverSkips says the sink transfers every object, unchanged or not
	// (it has no Checker and Create skips nothing): only that it skips
	// nothing changed is checked.
	NeverSkips bool
	// Discards says the sink keeps nothing (a benchmark's discard): only
	// the File contract is checked.
	Discards bool
}

func (s SinkSuite) withDefaults() SinkSuite {
	if s.PartSize <= 0 {
		s.PartSize = 64 << 10
	}
	if s.Threshold <= 0 {
		s.Threshold = s.PartSize
	}
	if s.Object == nil {
		s.Object = func(_ testing.TB, name string, data []byte, modTime time.Time) transfer.Object {
			return transfer.Object{Key: name, Name: name, Size: int64(len(data)), ModTime: modTime,
				ETag: fmt.Sprintf(`"%x"`, Data(name+modTime.String(), 8))}
		}
	}
	if s.PartBody == nil {
		s.PartBody = func(_ testing.TB, obj transfer.Object, data []byte, off, n int64) *transfer.Body {
			return bodyOf(data, off, n)
		}
	}
	return s
}

// Data returns n bytes that depend on seed: an object's content.
func Data(seed string, n int) []byte {
	b := make([]byte, n)
	x := uint64(14695981039346656037)
	for _, c := range []byte(seed) {
		x = (x ^ uint64(c)) * 1099511628211
	}
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x)
	}
	return b
}

// bodyOf is a plain body over bytes [off, off+n) of data.
func bodyOf(data []byte, off, n int64) *transfer.Body {
	return &transfer.Body{ReadCloser: io.NopCloser(bytes.NewReader(data[off : off+n])), Off: off, Len: n, Size: int64(len(data))}
}

// when is the modification time of the suite's objects.
var when = time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)

// TestSink runs the contract every Sink keeps:
//   - parallel non-overlapping writes (WriteAt, or WritePart for a
//     PartWriter), then Commit, make exactly the bytes visible, and
//     nothing is visible before Commit;
//   - Abort leaves nothing behind;
//   - a PartWriter part is all or nothing: a part whose body fails is
//     written whole when sent again;
//   - a Journal remembers durable parts for the next run of the same
//     object version, and only for it;
//   - a sink skips (Checker, or Create with a skip reason) only an object
//     already there and unchanged.
func TestSink(t *testing.T, s SinkSuite) {
	s = s.withDefaults()
	sizes := []int64{0, 1, s.Threshold - 1, 3*s.PartSize + 5}
	for _, size := range sizes {
		t.Run(fmt.Sprintf("CommitMakesVisible/%d", size), func(t *testing.T) {
			tg := s.NewTarget(t)
			sk := tg.Sink(t)
			name := fmt.Sprintf("d/obj-%d", size)
			data := Data(name, int(size))
			obj := s.Object(t, name, data, when)
			f := create(t, sk, obj)
			s.write(t, f, obj, data)
			if !s.Stream && !s.Discards && !s.putAtOnce(size) {
				if _, ok := tg.Read(t, name); ok {
					t.Fatalf("%s is visible before Commit", name)
				}
			}
			if err := f.Commit(); err != nil {
				t.Fatalf("Commit: %v", err)
			}
			if s.Discards {
				return
			}
			got, ok := tg.Read(t, name)
			if !ok || !bytes.Equal(got, data) {
				t.Fatalf("after Commit: %d bytes (there: %v) that differ, want the %d written", len(got), ok, len(data))
			}
			if !s.Stream {
				if names := tg.Names(t); !slices.Equal(names, []string{name}) {
					t.Fatalf("destination holds %q, want only %q", names, name)
				}
			}
		})
	}
	t.Run("AbortLeavesNothing", func(t *testing.T) {
		tg := s.NewTarget(t)
		sk := tg.Sink(t)
		for _, size := range []int64{1, 3*s.PartSize + 5} {
			if s.putAtOnce(size) {
				continue
			}
			name := fmt.Sprintf("aborted-%d", size)
			data := Data(name, int(size))
			obj := s.Object(t, name, data, when)
			f := create(t, sk, obj)
			s.writeParts(t, f, obj, data, func(i int) bool { return i%2 == 0 }) // half the parts
			if err := f.Abort(); err != nil {
				t.Fatalf("Abort: %v", err)
			}
			if s.Stream || s.Discards {
				return
			}
			if _, ok := tg.Read(t, name); ok {
				t.Fatalf("%s is visible after Abort", name)
			}
		}
		if s.Stream || s.Discards {
			return
		}
		if names := tg.Names(t); len(names) != 0 {
			t.Fatalf("after Abort the destination holds %q, want nothing", names)
		}
	})
	t.Run("PartWriterAllOrNothing", func(t *testing.T) {
		tg := s.NewTarget(t)
		sk := tg.Sink(t)
		const name = "retried"
		data := Data(name, int(3*s.PartSize+5))
		obj := s.Object(t, name, data, when)
		f := create(t, sk, obj)
		pw, ok := f.(transfer.PartWriter)
		if !ok {
			f.Abort()
			t.Skip("the sink's files take WriteAt, not whole parts")
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
		if s.Discards {
			return
		}
		if got, ok := tg.Read(t, name); !ok || !bytes.Equal(got, data) {
			t.Fatalf("after a part was sent again: %d bytes (there: %v) that differ, want %d", len(got), ok, len(data))
		}
	})
	t.Run("JournalRoundTrips", func(t *testing.T) {
		tg := s.NewTarget(t)
		const name = "resumed"
		done := func(i int) bool { return i == 0 || i == 2 }
		data, obj := s.suspended(t, tg, name, done)
		// The next run of the same version finds the parts, with their
		// sums, and their bytes.
		f := create(t, tg.Sink(t), obj)
		j, ok := f.(transfer.Journal)
		if !ok {
			t.Fatalf("the second run's file keeps no journal")
		}
		ra, _ := f.(io.ReaderAt)
		for i, off := range s.offsets(obj.Size) {
			n := s.partLen(obj.Size, off)
			have, sum := j.Completed(off, n)
			ok := have == n
			if ok != done(i) || ok && sum != fmt.Sprint("sum-", i) || !ok && have != 0 {
				t.Errorf("part %d: Completed = %d, %q; want whole: %v", i, have, sum, done(i))
			}
			if ok && ra != nil {
				got := make([]byte, n)
				if _, err := ra.ReadAt(got, off); err != nil || !bytes.Equal(got, data[off:off+n]) {
					t.Errorf("part %d read back: %v, or bytes that differ", i, err)
				}
			}
		}
		if ra == nil {
			t.Errorf("a journaled file is not an io.ReaderAt: the engine cannot check what it resumes")
		}
		s.writeParts(t, f, obj, data, func(i int) bool { return !done(i) })
		if err := f.Commit(); err != nil {
			t.Fatalf("Commit: %v", err)
		}
		if got, ok := tg.Read(t, name); !ok || !bytes.Equal(got, data) {
			t.Fatalf("resumed object: %d bytes (there: %v) that differ, want %d", len(got), ok, len(data))
		}
		if names := tg.Names(t); !slices.Equal(names, []string{name}) {
			t.Fatalf("destination holds %q, want only %q", names, name)
		}
	})
	t.Run("JournalForgetsOtherVersions", func(t *testing.T) {
		tg := s.NewTarget(t)
		const name = "replaced"
		data, obj := s.suspended(t, tg, name, func(int) bool { return true })
		other := pinned(s.Object(t, name, Data("other", len(data)), when.Add(time.Hour)))
		f := create(t, tg.Sink(t), other)
		defer f.Abort()
		if j, ok := f.(transfer.Journal); ok {
			for _, off := range s.offsets(obj.Size) {
				if have, _ := j.Completed(off, s.partLen(obj.Size, off)); have != 0 {
					t.Fatalf("another version of the object resumes the part at %d", off)
				}
			}
		}
	})
	t.Run("SkipsOnlyUnchanged", func(t *testing.T) {
		if s.Stream || s.Discards {
			t.Skip("nothing stays for a later run to skip")
		}
		tg := s.NewTarget(t)
		const name = "kept"
		data := Data(name, 1000)
		obj := s.Object(t, name, data, when)
		f := create(t, tg.Sink(t), obj)
		s.write(t, f, obj, data)
		if err := f.Commit(); err != nil {
			t.Fatalf("Commit: %v", err)
		}
		sk := tg.Sink(t) // a second run
		if why := skipped(t, sk, obj); why == "" && !s.NeverSkips {
			t.Errorf("an object already there and unchanged is not skipped")
		}
		longer := s.Object(t, name, Data(name, 1001), when)
		if why := skipped(t, sk, longer); why != "" {
			t.Errorf("an object whose size changed is skipped: %s", why)
		}
		rewritten := s.Object(t, name, Data("rewritten", 1000), when.Add(time.Hour))
		if why := skipped(t, sk, rewritten); why != "" {
			t.Errorf("an object rewritten with the same size is skipped: %s", why)
		}
	})
}

// pinned gives obj an ETag when nothing pins its version (a local file):
// a journal resumes only a version it can tell from another.
// suspended is a first run, in tg, of an object of three parts and a
// bit named name: it writes and journals the parts done picks (part i
// with the sum "sum-i"), then suspends its file for a later run, and
// returns the object's bytes and the object. The test is skipped when
// the sink's files keep no journal.
func (s SinkSuite) suspended(t *testing.T, tg Target, name string, done func(i int) bool) ([]byte, transfer.Object) {
	t.Helper()
	data := Data(name, int(3*s.PartSize+5))
	obj := pinned(s.Object(t, name, data, when))
	f := create(t, tg.Sink(t), obj)
	j, ok := f.(transfer.Journal)
	if !ok {
		f.Abort()
		t.Skip("the sink's files keep no journal")
	}
	s.writeParts(t, f, obj, data, done)
	for i, off := range s.offsets(obj.Size) {
		if done(i) {
			if err := j.PartDone(off, s.partLen(obj.Size, off), fmt.Sprint("sum-", i)); err != nil {
				t.Fatalf("PartDone: %v", err)
			}
		}
	}
	if _, err := j.Suspend(); err != nil {
		t.Fatalf("Suspend: %v", err)
	}
	return data, obj
}

func pinned(obj transfer.Object) transfer.Object {
	if obj.ETag == "" && obj.VersionID == "" {
		obj.ETag = fmt.Sprintf(`"%d-%d"`, obj.Size, obj.ModTime.UnixNano())
	}
	return obj
}

// create calls sk.Create and fails the test on error.
func create(t testing.TB, sk transfer.Sink, obj transfer.Object) transfer.File {
	t.Helper()
	f, err := sk.Create(context.Background(), obj)
	if err != nil {
		t.Fatalf("Create %s: %v", obj.Name, err)
	}
	return f
}

// skipped reports why sk would skip obj (its Checker, or Create's skip
// reason), or "" when it would write it.
func skipped(t testing.TB, sk transfer.Sink, obj transfer.Object) string {
	t.Helper()
	if c, ok := sk.(transfer.Checker); ok {
		if err := c.Check(obj); err != nil {
			if why := transfer.SkipReason(err); why != "" {
				return why
			}
			t.Fatalf("Check %s: %v", obj.Name, err)
		}
	}
	f, err := sk.Create(context.Background(), obj)
	if why := transfer.SkipReason(err); why != "" {
		return why
	}
	if err != nil {
		t.Fatalf("Create %s: %v", obj.Name, err)
	}
	if err := f.Abort(); err != nil {
		t.Fatalf("Abort %s: %v", obj.Name, err)
	}
	return ""
}

// putAtOnce says an object of size is visible as soon as its one part is
// written.
func (s SinkSuite) putAtOnce(size int64) bool {
	return s.PutsSmallAtOnce && size > 0 && size < s.Threshold
}

// offsets returns where the engine's parts of an object of size start:
// one part below the threshold, else parts of PartSize.
func (s SinkSuite) offsets(size int64) []int64 {
	if size == 0 {
		return nil
	}
	if size < s.Threshold {
		return []int64{0}
	}
	var offs []int64
	for off := int64(0); off < size; off += s.PartSize {
		offs = append(offs, off)
	}
	return offs
}

func (s SinkSuite) partLen(size, off int64) int64 {
	if size < s.Threshold {
		return size
	}
	return min(s.PartSize, size-off)
}

// write writes every part of data to f, as the engine would.
func (s SinkSuite) write(t testing.TB, f transfer.File, obj transfer.Object, data []byte) {
	t.Helper()
	s.writeParts(t, f, obj, data, func(int) bool { return true })
}

// writeParts writes the parts of data that pick chooses, all at once: a
// PartWriter takes each whole; a Stager each part through two stages, the
// second starting at an odd byte (an attempt retried from where it
// broke); any other file takes each part in 4 KiB WriteAt calls, the
// parts' writes interleaved.
func (s SinkSuite) writeParts(t testing.TB, f transfer.File, obj transfer.Object, data []byte, pick func(i int) bool) {
	t.Helper()
	pw, whole := f.(transfer.PartWriter)
	st, staged := f.(transfer.Stager)
	var wg sync.WaitGroup
	errs := make(chan error, len(s.offsets(obj.Size)))
	for i, off := range s.offsets(obj.Size) {
		if !pick(i) {
			continue
		}
		n := s.partLen(obj.Size, off)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if whole {
				got, err := pw.WritePart(context.Background(), off, n, s.PartBody(t, obj, data, off, n), func(int64) {})
				if err == nil && got != n {
					err = fmt.Errorf("moved %d bytes, want %d", got, n)
				}
				if err != nil {
					errs <- fmt.Errorf("WritePart %d+%d: %w", off, n, err)
				}
				return
			}
			if staged {
				cut := off + n/3 + 7
				for _, r := range [][2]int64{{off, min(cut, off+n)}, {min(cut, off+n), off + n}} {
					if err := writeStaged(st, data, r[0], r[1]); err != nil {
						errs <- err
						return
					}
				}
				return
			}
			for at := off; at < off+n; at += 4 << 10 {
				k := min(4<<10, off+n-at)
				if got, err := f.WriteAt(data[at:at+k], at); err != nil || int64(got) != k {
					errs <- fmt.Errorf("WriteAt %d+%d: wrote %d, %v", at, k, got, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// writeStaged writes data[from:to] through one stage of st, at most 4
// KiB per Wrote, as the engine's reads would.
func writeStaged(st transfer.Stager, data []byte, from, to int64) error {
	w, err := st.Stage(from, to-from)
	if err != nil {
		return fmt.Errorf("Stage %d+%d: %w", from, to-from, err)
	}
	for at := from; at < to; {
		dst := w.Next()
		k := min(int64(len(dst)), 4<<10, to-at)
		copy(dst, data[at:at+k])
		if err := w.Wrote(int(k)); err != nil {
			w.Close()
			return fmt.Errorf("Wrote at %d: %w", at, err)
		}
		at += k
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("stage %d+%d: Close: %w", from, to-from, err)
	}
	return nil
}

// errReader fails every read, as a connection that breaks.
type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errBroken }

var errBroken = errors.New("transfertest: connection broken")
