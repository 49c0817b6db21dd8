package fleet

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"time"
)

// DefaultWait is how long a Server holds a request for a range it does
// not hold yet, waiting for it to be written, before it answers 404:
// well under the requesters' DefaultStall (5 s), which would take a
// longer wait for the headers for a stalled peer.
const DefaultWait = 2 * time.Second

// writing is an object the engine is writing (Written), not committed
// yet: the partial file, opened once (the commit renames it, the inode
// and so the descriptor stay), and the byte ranges of it written so far.
type writing struct {
	f     *os.File
	etag  string
	size  int64
	spans []extent // written, sorted, merged where they touch
	// readers are the requests reading from f; gone: the entry was
	// dropped, and the last reader closes f.
	readers int
	gone    bool
}

// extent is the bytes [off, end) of an object.
type extent struct{ off, end int64 }

// add marks [off, end) written, merging it with the spans it touches.
func (w *writing) add(off, end int64) {
	i := sort.Search(len(w.spans), func(i int) bool { return w.spans[i].end >= off })
	j := i
	for j < len(w.spans) && w.spans[j].off <= end {
		off, end = min(off, w.spans[j].off), max(end, w.spans[j].end)
		j++
	}
	if i == j {
		w.spans = slices.Insert(w.spans, i, extent{off, end})
		return
	}
	w.spans[i] = extent{off, end}
	w.spans = slices.Delete(w.spans, i+1, j)
}

// covers reports whether [off, off+n) is written.
func (w *writing) covers(off, n int64) bool {
	i := sort.Search(len(w.spans), func(i int) bool { return w.spans[i].end > off })
	return i < len(w.spans) && w.spans[i].off <= off && off+n <= w.spans[i].end
}

// waiters are the requests waiting for something of one key to change.
type waiters struct {
	ch chan struct{} // closed when it does
	n  int
}

// Written marks bytes [off, off+n) of the object key, version etag, of
// size bytes, as written and checked (length, range, ETag) into the
// partial file at path, which the engine is still writing: peers may
// fetch those bytes from now on, before the whole object is verified
// (they verify it themselves against S3's checksum). The first mark of
// a key (or of another version of it) opens the file; later ones only
// add the range. Ready, once the object is committed verified, takes
// over; Discard drops it.
func (s *Server) Written(key, path, etag string, size, off, n int64) error {
	if n <= 0 || off < 0 || off+n > size {
		return fmt.Errorf("fleet written %s: bytes %d+%d of %d", key, off, n, size)
	}
	s.mu.Lock()
	if w := s.writing[key]; w != nil && w.etag == etag && w.size == size {
		w.add(off, off+n)
		s.changedLocked(key)
		s.mu.Unlock()
		return nil
	}
	s.mu.Unlock()
	f, err := os.Open(path) // once per object, outside the lock
	if err != nil {
		return fmt.Errorf("fleet written %s: %w", key, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.writing[key]
	if w != nil && w.etag == etag && w.size == size {
		f.Close() // another part opened it meanwhile
	} else {
		s.dropLocked(key)
		w = &writing{f: f, etag: etag, size: size}
		s.writing[key] = w
	}
	w.add(off, off+n)
	s.changedLocked(key)
	return nil
}

// Discard drops what Written marked of the object key (the engine
// fetches it again, or gave it up): none of it is served any more. An
// object marked Ready stays so.
func (s *Server) Discard(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropLocked(key)
	s.changedLocked(key)
}

// dropLocked forgets the object key being written; its file closes
// once no request reads it.
func (s *Server) dropLocked(key string) {
	w := s.writing[key]
	if w == nil {
		return
	}
	delete(s.writing, key)
	w.gone = true
	if w.readers == 0 {
		w.f.Close()
	}
}

// changedLocked wakes the requests waiting for key.
func (s *Server) changedLocked(key string) {
	if w := s.waits[key]; w != nil {
		close(w.ch)
		delete(s.waits, key)
	}
}

// servable is where a request's bytes come from: the file, the version and
// size it is of, and what to do once it was read.
type servable struct {
	f       *os.File
	etag    string
	size    int64
	release func()
}

// find looks up what answers a request for the range rng (a Range
// header) of key pinned to ifMatch: a committed file marked Ready, or
// the partial file of one being written when that range of it is
// written (or when the answer is 412 or 416 whatever else is written).
// It waits for the range, up to the server's Wait, while neither holds
// it, or until ctx ends or the server closes; ok false: nothing to serve.
func (s *Server) find(ctx context.Context, key, rng, ifMatch string) (src servable, ok bool) {
	var expired <-chan time.Time
	for {
		s.mu.Lock()
		if h, ready := s.ready[key]; ready {
			s.mu.Unlock()
			return s.open(key, h)
		}
		if w := s.writing[key]; w != nil && w.answers(rng, ifMatch) {
			w.readers++
			s.mu.Unlock()
			return servable{f: w.f, etag: w.etag, size: w.size, release: func() { s.doneReading(w) }}, true
		}
		if s.wait <= 0 || s.closed {
			s.mu.Unlock()
			return servable{}, false
		}
		ws := s.waits[key]
		if ws == nil {
			ws = &waiters{ch: make(chan struct{})}
			s.waits[key] = ws
		}
		ws.n++
		quit := s.quit
		s.mu.Unlock()
		if expired == nil {
			t := time.NewTimer(s.wait)
			defer t.Stop()
			expired = t.C
		}
		var end bool
		select {
		case <-ws.ch:
		case <-expired:
			end = true
		case <-ctx.Done():
			end = true
		case <-quit:
			end = true
		}
		s.mu.Lock()
		if ws.n--; ws.n == 0 && s.waits[key] == ws {
			delete(s.waits, key)
		}
		s.mu.Unlock()
		if end {
			return servable{}, false
		}
	}
}

// answers reports whether a request for rng pinned to ifMatch can be
// answered from what is written: its range is, or the answer is 412
// (another version) or 416 (no range of this object).
func (w *writing) answers(rng, ifMatch string) bool {
	if ifMatch != "" && unquote(ifMatch) != unquote(w.etag) {
		return true
	}
	off, n, _, err := parseRange(rng, w.size)
	return err != nil || w.covers(off, n)
}

// doneReading ends a request's read of w's file.
func (s *Server) doneReading(w *writing) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w.readers--; w.readers == 0 && w.gone {
		w.f.Close()
	}
}
