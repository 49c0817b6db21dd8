package transfer

import (
	"context"
	"sync"
)

// restPiece is the least length of a piece of a taken-over range's rest:
// a straggler is cut at the end of a run, where its rest is all that is
// left, so it is spread over the idle slots in pieces shorter than the
// tail's (tailPiece), each still long enough to be worth its request.
const restPiece = 256 << 10

// rest is what a range taken over fetches besides its own next attempt:
// the other pieces of its rest, each a range of its own on a slot that
// was idle, run beside it and joined to it once all have ended.
type rest struct {
	wg     sync.WaitGroup
	ctx    context.Context // the pieces' and the range's: ends when one fails
	cancel context.CancelCauseFunc
	pieces []restRun
}

// restRun is one piece of a taken-over range's rest.
type restRun struct {
	off, n int64
	got    int64
	sum    partSum
	err    error
}

// spread splits the rest [at, end) of a range taken over, a part or a
// whole object's fetch, when its bytes may be fetched in more ranges
// (cuttable), its sum can be joined from pieces (a CRC, not an MD5 summed
// in order) and slots are idle:
// into min(idle slots + 1, ceil(rest / restPiece)) pieces, boundaries
// multiples of the file's alignment. The range's next attempt takes the
// first piece; it returns where that piece ends and the rest running
// the others (nil when the rest is not split).
func (r *rangeRun) spread(ctx context.Context, at, end int64) (int64, *rest) {
	t, e := r.t, r.e
	if r.sum.md5 != nil || !t.cuttable() {
		return end, nil
	}
	idle := int64(e.gate.bound() - e.gate.inFlightNow())
	k := min(idle+1, ceilDiv(end-at, restPiece))
	if k < 2 {
		return end, nil
	}
	step := ceilDiv(ceilDiv(end-at, k), t.align) * t.align
	first := min(end, ceilDiv(at+step, t.align)*t.align)
	if first >= end {
		return end, nil
	}
	rs := &rest{}
	rs.ctx, rs.cancel = context.WithCancelCause(ctx)
	for off := first; off < end; off += step {
		rs.pieces = append(rs.pieces, restRun{off: off, n: min(step, end-off)})
	}
	e.splits.Add(int64(len(rs.pieces)))
	for i := range rs.pieces {
		p := &rs.pieces[i]
		pr := &rangeRun{e: e, t: t, o: r.o, f: r.f, v: r.v, st: r.st, hedge: r.hedge, piece: span{off: p.off, n: p.n}}
		r.v.startPart(&pr.sum)
		rs.wg.Add(1)
		go pr.runPiece(rs, p)
	}
	return first, rs
}

// runPiece fetches piece p of a rest as the range pr of its own, with
// its own sum, on a slot of its own.
func (pr *rangeRun) runPiece(rs *rest, p *restRun) {
	defer rs.wg.Done()
	s, err := pr.e.gate.acquire(rs.ctx)
	if err == nil {
		p.got, err = pr.fetch(rs.ctx, p.off, p.n, s)
	}
	p.sum, p.err = pr.sum, err
	if err != nil {
		rs.cancel(err)
	}
}

// join waits for the pieces of rs and, when all arrived, joins their
// sums to the range's (which covers every byte before them) and returns
// the bytes they moved. When one failed it returns what ended them: the
// first failure, which cancelled the others (or the range's own, or the
// run's end). The bytes they moved then go to the object's count only:
// the range ends where its own bytes do.
func (r *rangeRun) join(rs *rest) (int64, error) {
	rs.wg.Wait()
	defer rs.cancel(nil)
	var got int64
	failed := false
	for i := range rs.pieces {
		got += rs.pieces[i].got
		failed = failed || rs.pieces[i].err != nil
	}
	if failed {
		r.t.moved.Add(got)
		return 0, context.Cause(rs.ctx) // every failure cancels rs: the first is its cause
	}
	if r.sum.on { // every piece's sum is on with the range's: one verifier, its algorithm known
		for i := range rs.pieces {
			r.sum.run = r.sum.run.Join(rs.pieces[i].sum.run)
		}
	}
	return got, nil
}
