package transfer

import (
	"context"
	"slices"
	"sync/atomic"
	"time"
)

const (
	// minPiece is the least length of either half of a split range.
	minPiece = 1 << 20
	// minSplitTime is the least time a range must still need, at the
	// pace it has shown, to be split (and at least splitTTFB median
	// times to first byte): splitting saves about half of that time
	// less one time to first byte, and costs the bytes the server has
	// already sent past the split point, which are dropped.
	minSplitTime = 200 * time.Millisecond
	splitTTFB    = 4
)

// piece is a range in flight that may be split at the end of a run:
// when nothing is left to plan and the window has idle slots, the
// scheduler asks the ranges with the most bytes left to give up the
// second half of what they have not yet received. The range's own copy
// loop answers, between two buffers, so the split point always lies
// ahead of every byte it wrote: it moves its end to the split point and
// hands the rest to the scheduler as a new range, which takes an idle
// slot. Every byte is still written once, by one range, and summed and
// journaled as any range's.
type piece struct {
	t *object
	// end is where the range stops now (it only moves back, by the
	// range's own goroutine); pos how far it has written, updated every
	// countEvery bytes, for the scheduler's choice.
	end, pos atomic.Int64
	// from and began: where and when (since the engine's start) the
	// range began, for its pace.
	from, began int64
	// want: the scheduler asked for a split the range has not answered.
	want atomic.Bool
}

// splittable reports whether the ranges of t may be split: not a
// whole-object request (its checksum runs over the whole body in
// order), nothing that holds ranges back (the order window, the
// bandwidth cap) or writes parts whole (a part writer), and no
// per-object cap (--threads asks for that many ranges per object, as
// the original s3pd ran them).
func (t *object) splittable() bool {
	_, whole := t.f.(PartWriter)
	return !t.oneRequest && t.window == 0 && !whole && t.e.opts.Limiter == nil && t.e.opts.Threads == 0
}

// split answers a request to split, from the range's copy loop: the
// range has written up to pos and stops at end. It returns the range's
// new end: halfway through what is left when both halves have at least
// minPiece bytes (the second half goes to the scheduler), else end.
func (p *piece) split(pos, end int64) int64 {
	p.want.Store(false)
	s := p.t.e.sched
	rest := end - pos
	if rest < 2*minPiece {
		s.declined()
		return end
	}
	at := pos + rest/2
	at -= at % 4096
	if !s.addTail(p.t, span{off: at, n: end - at}) {
		return end
	}
	p.end.Store(at)
	return at
}

// needs is how long the range still needs at the pace it has shown
// since it began (now is the time since the engine's start); 0 before
// it has moved countEvery bytes.
func (p *piece) needs(now int64) time.Duration {
	pos := p.pos.Load()
	if pos-p.from < countEvery {
		return 0
	}
	return time.Duration(float64(now-p.began) * float64(p.end.Load()-pos) / float64(pos-p.from))
}

// register starts offering p for splits.
func (s *scheduler) register(p *piece) {
	s.mu.Lock()
	s.live[p] = struct{}{}
	s.cond.Signal() // it may take an idle slot's share
	s.mu.Unlock()
}

// unregister ends p's offer, once its range has ended.
func (s *scheduler) unregister(p *piece) {
	s.mu.Lock()
	delete(s.live, p)
	if p.want.Swap(false) {
		s.asking--
	}
	s.mu.Unlock()
}

// splitTick is how often the dispatcher looks again for ranges to split
// at the end of a run, as their pace becomes known.
const splitTick = 50 * time.Millisecond

// tick wakes the dispatcher every splitTick at the end of a run, until
// ctx ends.
func (s *scheduler) tick(ctx context.Context) {
	t := time.NewTicker(splitTick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if s.e.listed.Load() {
			s.mu.Lock()
			if len(s.open) == 0 && len(s.live) > 0 {
				s.cond.Signal()
			}
			s.mu.Unlock()
		}
	}
}

// wake has the dispatcher look again for work: the listing ended.
func (s *scheduler) wake() {
	s.mu.Lock()
	s.cond.Signal()
	s.mu.Unlock()
}

// declined records a split request answered without a split.
func (s *scheduler) declined() {
	s.mu.Lock()
	s.asking--
	s.mu.Unlock()
}

// addTail queues the second half of a split range of t for an idle
// slot; false when it cannot run (the run or the object is ending).
func (s *scheduler) addTail(t *object, r span) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asking--
	if s.stopped || t.pctx.Err() != nil {
		return false
	}
	t.running++ // the object does not end before this range does
	s.tails = append(s.tails, tail{t, r})
	s.e.splits.Add(1)
	s.cond.Signal()
	return true
}

// tail is the second half of a split range, waiting for a slot.
type tail struct {
	t *object
	r span
}

// askSplits asks ranges in flight to split, one per idle slot of the
// window not already promised to a tail or an asked split, at the end
// of a run: the listing ended and no open object has a range to plan.
// The ranges with the most bytes left are asked first. Under the lock.
func (s *scheduler) askSplits() {
	if len(s.open) > 0 || len(s.live) == 0 || !s.e.listed.Load() {
		return
	}
	idle := s.e.gate.bound() - s.e.gate.inFlightNow() - s.asking - len(s.tails)
	now := int64(time.Since(s.e.start))
	least := max(minSplitTime, splitTTFB*s.e.ttfb.quantile(0.5))
	var cands []*piece
	for p := range s.live {
		if p.want.Load() {
			continue
		}
		if p.end.Load()-p.pos.Load() >= 2*minPiece+countEvery && p.needs(now) >= least {
			cands = append(cands, p)
		}
	}
	if len(cands) > max(idle, 0) {
		s.e.gate.demand(s.asking + len(s.tails)) // more could split than the window holds
	}
	if idle <= 0 {
		return
	}
	left := func(p *piece) int64 { return p.end.Load() - p.pos.Load() }
	slices.SortFunc(cands, func(a, b *piece) int { return int(left(b) - left(a)) })
	for _, p := range cands[:min(idle, len(cands))] {
		p.want.Store(true)
		s.asking++
	}
}
