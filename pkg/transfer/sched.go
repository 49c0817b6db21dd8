package transfer

import (
	"context"
	"sync"
)

// scheduler decides which range takes the next request slot. Every open
// object feeds it its ranges, planned one at a time as they start, and
// one dispatcher hands the slots of the budget (the gate) to them: the
// open object with the most bytes not yet started goes first, so a single
// object takes every free slot, and at the end of a run the last objects
// drain together instead of one after another. An object's ranges are
// held back by Options.Threads (a per-object cap, when set) and by its
// file's order window (OrderWindow), never by the number of objects open.
// At the end of a run, what is left is planned in pieces sized to the
// free slots (tail.go); no range in flight is ever cut.
// The lock is taken a few times per range, never per buffer of data.
type scheduler struct {
	e    *Engine
	mu   sync.Mutex
	cond *sync.Cond
	open []*object // objects with ranges still to plan, in the order they opened
	// room is where workers wait to open an object (admit); opening
	// counts those admitted and not yet added, or ended before.
	room    *sync.Cond
	opening int
	// closed: no object will be added.
	closed bool
	// work hands a range to an idle runner (runner); closed when the
	// dispatcher returns.
	work chan job
}

// job is a range to run with the request slot it was given.
type job struct {
	t *object
	r span
	s slot
}

// OrderWindow is implemented by files that take their bytes in order
// through a bounded reorder buffer (a stream such as stdout): the engine
// never starts a range that ends more than OrderWindow bytes past the
// first byte of the object that some range has not yet written, so no
// write waits on the window.
type OrderWindow interface {
	OrderWindow() int64
}

// span is one range of an object: bytes [off, off+n), or the whole
// object in one request without a Range.
type span struct {
	off, n int64
	whole  bool
}

func newScheduler(e *Engine) *scheduler {
	s := &scheduler{e: e, work: make(chan job)}
	s.cond = sync.NewCond(&s.mu)
	s.room = sync.NewCond(&s.mu)
	return s
}

// admit waits until a worker may open one more object: the open objects
// with ranges still to plan, and those being opened, are fewer than the
// window (admits). So the objects held track the requests the window
// lets out (a window's worth of ranges ready for the slots that free
// next), not the budget, which Workers defaults to: with 256 small
// objects and a window settled at 16, opening all 256 at once cost the
// run a few percent of its speed on two cores over TLS (a goroutine, a
// file and a plan each, and the scheduler's scans over them). Workers
// stays the ceiling. False when ctx ended.
func (s *scheduler) admit(ctx context.Context) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.open)+s.opening >= s.admits() {
		if ctx.Err() != nil {
			return false
		}
		s.room.Wait()
	}
	s.opening++
	return true
}

// admits is how many objects may be open with ranges still to plan (or
// opening): the window, and at least two, so that even a window of one
// request chooses between two objects (the largest first). Under the
// lock.
func (s *scheduler) admits() int {
	return max(2, s.e.gate.bound())
}

// unadmit gives back the admission of a worker whose object did not
// open: its start failed, or the queue gave it none.
func (s *scheduler) unadmit() {
	s.mu.Lock()
	s.opening--
	s.room.Signal()
	s.mu.Unlock()
}

// add hands the scheduler an object whose file is created.
func (s *scheduler) add(t *object) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t.queued {
		s.opening-- // admitted: it holds a place in s.open instead
	}
	t.unqueue()
	if t.o.Size == 0 || t.pctx.Err() != nil {
		t.stopPlanning()
		s.room.Signal()
		return
	}
	s.open = append(s.open, t)
	s.cond.Signal()
}

// close says that no object will be added.
func (s *scheduler) close() {
	s.mu.Lock()
	s.closed = true
	s.cond.Broadcast()
	s.mu.Unlock()
}

// run dispatches ranges until every object added was planned to its end,
// or ctx ends.
func (s *scheduler) run(ctx context.Context) {
	stop := context.AfterFunc(ctx, func() {
		s.mu.Lock()
		s.cond.Broadcast()
		s.room.Broadcast()
		s.mu.Unlock()
	})
	defer stop()
	defer close(s.work) // idle runners return
	// A range is chosen once its slot is free, not before it waits for
	// one: so the largest object is the one with the most bytes left when
	// the slot frees, counting objects opened while the window was full.
	for s.ready(ctx) {
		slot, err := s.e.gate.acquire(ctx)
		if err != nil {
			continue // the run ended: ready stops planning
		}
		t, r, ok := s.next()
		if !ok {
			s.e.gate.release(slot, false) // its range went away (an object failed)
			continue
		}
		s.start(job{t, r, slot})
	}
}

// start hands j to an idle runner, or starts a runner for it. Runners
// live for the run, as many as ranges ever ran at once: a goroutine per
// range would grow its stack anew through the engine's and the HTTP
// client's calls for every request, a cost small objects feel.
func (s *scheduler) start(j job) {
	select {
	case s.work <- j:
	default:
		go s.runner(j)
	}
}

// runner runs ranges, j first, until the dispatcher returns.
// Each keeps one rangeRun for them all.
func (s *scheduler) runner(j job) {
	r := new(rangeRun)
	for ok := true; ok; j, ok = <-s.work {
		j.t.runRange(r, j.r, j.s)
	}
}

// ready waits until a range may start; false when there will be none
// (every object was planned to its end, or ctx ended).
func (s *scheduler) ready(ctx context.Context) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		if ctx.Err() != nil {
			for _, t := range s.open {
				t.stopPlanning()
			}
			s.open = nil
			return false
		}
		if s.pick() != nil {
			return true
		}
		if s.closed && len(s.open) == 0 {
			return false
		}
		if len(s.open)+s.opening < s.admits() {
			s.room.Signal() // no range may start: one more object may open
		}
		s.cond.Wait()
	}
}

// next plans the range that starts now: the next range of the open
// object with the most bytes left, sized to the tail of the run when it
// belongs to its last wave; false if there is none.
func (s *scheduler) next() (*object, span, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := s.pick(); t != nil {
		r, cut := t.plan(s.tailLen(t))
		if cut {
			s.e.splits.Add(1)
		}
		t.running++
		if t.next >= t.o.Size {
			s.drop(t)
		}
		// A range went out: the window may hold one more object open
		// (one left the open set, or the window grew).
		s.room.Signal()
		return t, r, true
	}
	return nil, span{}, false
}

// pick returns the open object whose next range may start and that has
// the most bytes not yet started, or nil. Objects that failed leave the
// open set here.
func (s *scheduler) pick() *object {
	var best *object
	for i := 0; i < len(s.open); i++ {
		t := s.open[i]
		if t.pctx.Err() != nil {
			s.drop(t)
			i--
			continue
		}
		if !t.mayStart(s.e.opts.Threads) {
			continue
		}
		if best == nil || t.o.Size-t.next > best.o.Size-best.next {
			best = t
		}
	}
	return best
}

// planned reports whether no open object has a range left to plan.
func (s *scheduler) planned() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.open) == 0
}

// drop removes t from the open set: it plans no more ranges.
func (s *scheduler) drop(t *object) {
	for i, u := range s.open {
		if u == t {
			s.open = append(s.open[:i], s.open[i+1:]...)
			break
		}
	}
	t.stopPlanning()
}

// ended records the end of range r of t, with its error.
func (s *scheduler) ended(t *object, r span, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.endedLocked(t, r, err)
}

func (s *scheduler) endedLocked(t *object, r span, err error) {
	t.running--
	if err != nil {
		if t.err == nil {
			t.err = err
		}
		t.cancel()
	} else {
		t.written.add(r.off, r.off+r.n)
	}
	if t.planningStopped && t.running == 0 && !t.ended {
		t.ended = true
		close(t.done)
	}
	s.cond.Signal()
}

// mayStart reports whether the object's next range may start now: under
// the per-object cap (0: none) and within its file's order window.
func (t *object) mayStart(threads int) bool {
	if threads > 0 && t.running >= threads {
		return false
	}
	if t.window > 0 && t.running > 0 {
		_, n := t.peek()
		return t.next+n <= t.written.upTo+t.window
	}
	return true
}

// peek returns the offset and length of the object's next range.
func (t *object) peek() (off, n int64) {
	return t.next, min(t.partSize, t.o.Size-t.next)
}

// plan returns the object's next range and moves past it: a part, or
// tail bytes when that is shorter (cut says so), fitted to the extents
// an earlier run journaled.
func (t *object) plan(tail int64) (r span, cut bool) {
	if t.oneRequest {
		t.next = t.o.Size
		return span{off: 0, n: t.o.Size, whole: true}, false
	}
	off, n := t.peek()
	if cut = tail > 0 && tail < n; cut {
		n = tail
	}
	n = t.fitJournal(off, n)
	t.next += n
	return span{off: off, n: n}, cut
}

// stopPlanning marks the object as planning no more ranges; once its
// ranges in flight end, its wait returns.
func (t *object) stopPlanning() {
	if t.planningStopped {
		return
	}
	t.planningStopped = true
	if t.running == 0 && !t.ended {
		t.ended = true
		close(t.done)
	}
}

// prefix tracks how far from an object's start every byte is written,
// from ranges that complete in any order: it holds only the ranges that
// completed ahead of a gap.
type prefix struct {
	upTo  int64
	ahead map[int64]int64 // start -> end of ranges past a gap
}

func (p *prefix) add(off, end int64) {
	if off != p.upTo {
		if p.ahead == nil {
			p.ahead = map[int64]int64{}
		}
		p.ahead[off] = end
		return
	}
	p.upTo = end
	for {
		next, ok := p.ahead[p.upTo]
		if !ok {
			return
		}
		delete(p.ahead, p.upTo)
		p.upTo = next
	}
}
