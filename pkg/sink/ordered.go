package sink

import (
	"context"
	"errors"
	"fmt"
	"hash"
	"io"
	"sync"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// Ordered writes objects to a stream (stdout) in byte order. Ranges that
// arrive ahead of the stream's position wait in a reorder window of fixed
// size; a range beyond the window blocks its writer until the stream
// catches up, so memory stays bounded whatever the object's size.
type Ordered struct {
	w      io.Writer
	window int
	mu     sync.Mutex
	used   bool
}

// NewOrdered returns a sink writing to w with a reorder window of window
// bytes (at least as large as one buffer of the engine).
func NewOrdered(w io.Writer, window int) *Ordered {
	return &Ordered{w: w, window: window}
}

// Destination is "-": the object goes to standard output.
func (s *Ordered) Destination(string) string { return "-" }

// Create implements transfer.Sink; a stream takes one object only.
func (s *Ordered) Create(context.Context, transfer.Object) (transfer.File, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.used {
		return nil, transfer.Permanent(errors.New("a stream destination takes a single object"))
	}
	s.used = true
	f := &orderedFile{w: s.w, ring: make([]byte, s.window), pending: map[int64]int{}}
	f.cond = sync.NewCond(&f.mu)
	return f, nil
}

type orderedFile struct {
	w       io.Writer
	sum     hash.Hash // what passed on, in order (SumWritten), or nil
	mu      sync.Mutex
	cond    *sync.Cond
	ring    []byte
	pos     int64         // bytes written to w
	pending map[int64]int // offset -> length of ranges held in ring
	err     error
}

// WriteAt writes p at off: straight through when off is the stream's
// position, else into the ring once it fits within the window.
func (f *orderedFile) WriteAt(p []byte, off int64) (int, error) {
	if len(p) > len(f.ring) {
		return 0, fmt.Errorf("write of %d bytes exceeds the reorder window of %d", len(p), len(f.ring))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for f.err == nil && off != f.pos && off+int64(len(p)) > f.pos+int64(len(f.ring)) {
		f.cond.Wait()
	}
	if f.err != nil {
		return 0, f.err
	}
	if off != f.pos {
		f.put(p, off)
		f.pending[off] = len(p)
		return len(p), nil
	}
	if err := f.out(p); err != nil {
		f.fail(err)
		return 0, err
	}
	f.pos += int64(len(p))
	for {
		n, ok := f.pending[f.pos]
		if !ok {
			break
		}
		delete(f.pending, f.pos)
		if err := f.flush(f.pos, n); err != nil {
			f.fail(err)
			return 0, err
		}
		f.pos += int64(n)
	}
	f.cond.Broadcast()
	return len(p), nil
}

func (f *orderedFile) put(p []byte, off int64) {
	i := int(off % int64(len(f.ring)))
	k := copy(f.ring[i:], p)
	copy(f.ring, p[k:])
}

func (f *orderedFile) flush(off int64, n int) error {
	i := int(off % int64(len(f.ring)))
	if i+n <= len(f.ring) {
		return f.out(f.ring[i : i+n])
	}
	if err := f.out(f.ring[i:]); err != nil {
		return err
	}
	return f.out(f.ring[:n-(len(f.ring)-i)])
}

// out passes p on to the stream, in order, and sums it.
func (f *orderedFile) out(p []byte) error {
	n, err := f.w.Write(p)
	if f.sum != nil {
		f.sum.Write(p[:n])
	}
	return err
}

// SumWritten implements transfer.Stream.
func (f *orderedFile) SumWritten(h hash.Hash) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sum = h
}

// StreamName implements transfer.Stream: an Ordered sink writes to
// standard output.
func (f *orderedFile) StreamName() string { return "stdout" }

func (f *orderedFile) fail(err error) {
	f.err = err
	f.cond.Broadcast()
}

// OrderWindow implements transfer.OrderWindow: the engine starts no range
// that would wait for the stream to catch up.
func (f *orderedFile) OrderWindow() int64 { return int64(len(f.ring)) }

// Commit reports whether every byte reached the stream.
func (f *orderedFile) Commit() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	if len(f.pending) > 0 {
		return errors.New("stream ended with ranges still pending")
	}
	return nil
}

// Abort wakes any writer still waiting.
func (f *orderedFile) Abort() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err == nil {
		f.fail(errors.New("stream aborted"))
	}
	return nil
}
