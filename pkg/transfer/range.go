package transfer

import (
	"errors"
	"fmt"
)

// rangeRun is one range of an object on its way into the file: what every
// step of it needs (the object, its file and verifier, the range's sums,
// the piece planned, and per attempt the lane and the stall clock), so
// that fetch, attempt and copy take only the coordinates of bytes. Each
// runner keeps one for the run and resets it for every range it runs:
// nothing is allocated for it per range, nor anything per read.
type rangeRun struct {
	e     *Engine
	t     *object
	o     *Object
	f     File
	v     *verifier // nil: nothing is verified
	piece span
	sum   partSum // what the range's bytes sum to as they stream past

	// What the file is, looked up once per range.
	pw PartWriter // the file takes whole parts, or nil
	st Stager     // the file lends its buffers, or nil
	// hedge: the range may be taken over as a straggler (not one that
	// the sink's order window or the bandwidth cap may hold back, nor a
	// part writer's, whose part would start over, nor one of an object
	// served only whole, whose every request starts at its first byte).
	hedge bool

	// Set by each attempt.
	l     *lane
	clock *rangeClock
	buf   []byte
	// arrived counts the bytes already taken off the lane's outstanding
	// count.
	arrived int64
}

// reset readies r for piece sp of t.
func (r *rangeRun) reset(t *object, sp span) {
	_, ordered := t.f.(OrderWindow)
	pw, _ := t.f.(PartWriter)
	st, _ := t.f.(Stager)
	*r = rangeRun{
		e: t.e, t: t, o: &t.o, f: t.f, v: t.verify, piece: sp, pw: pw, st: st,
		hedge: !ordered && pw == nil && t.e.opts.Limiter == nil && !t.o.NoRanges,
	}
	t.verify.startPart(&r.sum)
}

// runRange moves piece sp of the object into its file through r, holding
// request slot s for its first attempt, and tells the scheduler it ended.
func (t *object) runRange(r *rangeRun, sp span, s slot) {
	r.reset(t, sp)
	var err error
	if sp.whole {
		err = r.fetchWhole(s)
	} else {
		err = r.part(s)
	}
	*r = rangeRun{} // holds nothing of the object once it ended
	t.e.sched.ended(t, sp, err)
}

// fetchWhole fetches the object in one request, without a Range.
func (r *rangeRun) fetchWhole(s slot) error {
	got, err := r.fetch(r.t.pctx, 0, r.o.Size, s)
	r.t.moved.Add(got)
	if err == nil {
		r.v.partWritten(0, &r.sum)
	}
	return err
}

// part moves the piece's bytes into the file, records their sum and
// journals them. What an earlier run journaled of the part is taken
// first (resumed), after which only the rest is fetched. A part this run
// is interrupted in journals the prefix it wrote, with its running CRC,
// so that an early Ctrl-C on large parts does not start them over.
func (r *rangeRun) part(s slot) error {
	t, off, n := r.t, r.piece.off, r.piece.n
	journal, _ := r.f.(Journal)
	kept := r.resumed(journal)
	if kept == n {
		r.e.gate.release(s, false) // the slot it was given
		return nil                 // durable from an earlier run, and read back
	}
	got, err := r.fetch(t.pctx, off+kept, n-kept, s)
	t.moved.Add(got)
	if err != nil {
		if journal != nil && r.pw == nil && t.ctx.Err() != nil && kept+got > 0 {
			// Interrupted: keep the prefix. Its sum covers all of it,
			// the bytes kept before and those written now.
			if sum, ok := r.v.partInterrupted(&r.sum, kept+got); ok {
				err = errors.Join(err, journal.PartDone(off, kept+got, sum))
			}
		}
		return fmt.Errorf("bytes=%d-%d: %w", off, off+n-1, err)
	}
	sum := r.v.partWritten(off, &r.sum)
	if journal != nil {
		if err := journal.PartDone(off, n, sum); err != nil {
			return fmt.Errorf("journal bytes=%d-%d: %w", off, off+n-1, err)
		}
	}
	t.e.opts.Observer.PartDone(t.o, off, n)
	return nil
}

// resumed takes what an earlier run journaled of the part, once its bytes
// read back with the sum that run computed: the whole part, or the prefix
// that run had written when it was interrupted (not for a part writer,
// whose parts are written whole or not at all). It returns how many
// leading bytes it took.
func (r *rangeRun) resumed(j Journal) int64 {
	if j == nil {
		return 0
	}
	off, n := r.piece.off, r.piece.n
	have, sum := j.Completed(off, n)
	if have != n && (have <= 0 || r.pw != nil) {
		return 0
	}
	if !r.v.resumedPart(&r.sum, r.f, off, have, sum) {
		return 0
	}
	r.t.reused.Add(have)
	if have == n {
		r.v.partWritten(off, &r.sum)
	}
	return have
}
