package transfertest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// sample makes an object of size bytes named name, as the suite's Object
// lists it, and returns it with its content.
func (s *SinkSuite) sample(t testing.TB, name string, size int64) (transfer.Object, []byte) {
	data := Data(name, int(size))
	return s.Object(t, name, data, when), data
}

// commitNew writes a new object of size bytes named name through sk, as
// the engine would, and commits it.
func (s *SinkSuite) commitNew(t testing.TB, sk transfer.Sink, name string, size int64) (transfer.Object, []byte) {
	t.Helper()
	obj, data := s.sample(t, name, size)
	f := create(t, sk, obj)
	s.write(t, f, obj, data)
	if err := f.Commit(); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	return obj, data
}

// suspended is a first run, in tg, of an object of three parts and a
// bit named name: it writes and journals the parts done picks (part i
// with the sum "sum-i"), then suspends its file for a later run, and
// returns the object's bytes and the object. The test is skipped when
// the sink's files keep no journal.
func (s *SinkSuite) suspended(t *testing.T, tg Target, name string, done func(i int) bool) ([]byte, transfer.Object) {
	t.Helper()
	data := Data(name, int(3*s.PartSize+5))
	obj := pinned(s.Object(t, name, data, when))
	f := create(t, tg.Sink(t), obj)
	j, ok := f.(transfer.Journal)
	if !ok {
		abort(t, f)
		t.Skip("the sink's files keep no journal (no Journal)")
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

// pinned gives obj an ETag when nothing pins its version (a local file):
// a journal resumes only a version it can tell from another.
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

// abort aborts f, reporting an error without stopping the test.
func abort(t testing.TB, f transfer.File) {
	t.Helper()
	if err := f.Abort(); err != nil {
		t.Errorf("Abort: %v", err)
	}
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

// offsets returns where the engine's parts of an object of size start:
// one part below the threshold, else parts of PartSize.
func (s *SinkSuite) offsets(size int64) []int64 {
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

func (s *SinkSuite) partLen(size, off int64) int64 {
	if size < s.Threshold {
		return size
	}
	return min(s.PartSize, size-off)
}

// write writes every part of data to f, as the engine would.
func (s *SinkSuite) write(t testing.TB, f transfer.File, obj transfer.Object, data []byte) {
	t.Helper()
	s.writeParts(t, f, obj, data, func(int) bool { return true })
}

// writeParts writes the parts of data that pick chooses, all at once: a
// PartWriter takes each whole; a Stager each part through two stages, the
// second starting at an odd byte (an attempt retried from where it
// broke); any other file takes each part in 4 KiB WriteAt calls, the
// parts' writes interleaved.
func (s *SinkSuite) writeParts(t testing.TB, f transfer.File, obj transfer.Object, data []byte, pick func(i int) bool) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, len(s.offsets(obj.Size)))
	for i, off := range s.offsets(obj.Size) {
		if !pick(i) {
			continue
		}
		n := s.partLen(obj.Size, off)
		wg.Go(func() {
			if err := s.writePart(t, f, obj, data, off, n); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// writePart writes bytes [off, off+n) of data to f the way f takes them
// (see writeParts).
func (s *SinkSuite) writePart(t testing.TB, f transfer.File, obj transfer.Object, data []byte, off, n int64) error {
	if pw, ok := f.(transfer.PartWriter); ok {
		got, err := pw.WritePart(context.Background(), off, n, s.PartBody(t, obj, data, off, n), func(int64) {})
		if err == nil && got != n {
			err = fmt.Errorf("moved %d bytes, want %d", got, n)
		}
		if err != nil {
			return fmt.Errorf("WritePart %d+%d: %w", off, n, err)
		}
		return nil
	}
	if st, ok := f.(transfer.Stager); ok {
		cut := min(off+n/3+7, off+n)
		if err := writeStaged(st, data, off, cut); err != nil {
			return err
		}
		return writeStaged(st, data, cut, off+n)
	}
	for at := off; at < off+n; at += 4 << 10 {
		k := min(4<<10, off+n-at)
		if got, err := f.WriteAt(data[at:at+k], at); err != nil || int64(got) != k {
			return fmt.Errorf("WriteAt %d+%d: wrote %d, %v", at, k, got, err)
		}
	}
	return nil
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
