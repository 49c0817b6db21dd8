package transfer

const (
	// tailPiece is the least length of a piece the last wave of a run is
	// planned in: a smaller one costs a request more than it saves.
	tailPiece = 1 << 20
	// tailAlign is what the boundaries of the last wave's pieces are
	// multiples of (and of a file's own alignment: Aligner).
	tailAlign = 4096
)

// Aligner is implemented by files whose writes are best aligned to a
// block (direct I/O): the engine puts the boundaries of the ranges it
// plans at the end of a run on multiples of Align bytes.
type Aligner interface {
	Align() int64
}

// Extents is implemented by journals that can say how an earlier run
// cut the object: a rerun plans its ranges on the extents recorded, so
// that it fetches none of their bytes again, however that run sized its
// ranges.
type Extents interface {
	// Extent returns the length of the extent recorded at off (0 for
	// none) and where the next one after off begins (-1 for none).
	Extent(off int64) (n, next int64)
}

// splittable reports whether the ranges of t may be sized to the tail
// of the run: not a whole-object request, nothing that holds ranges
// back (the order window, the bandwidth cap) or numbers them (a part
// writer, whose parts are an upload's or a copy's), and no per-object
// cap (--threads asks for that many ranges per object, as the original
// s3pd ran them).
func (t *object) splittable() bool {
	return !t.oneRequest && t.cuttable()
}

// cuttable reports whether t's bytes may be fetched in more ranges than
// planned: nothing holds ranges back or numbers them, and no per-object
// cap (what splittable asks besides a ranged fetch).
func (t *object) cuttable() bool {
	_, whole := t.f.(PartWriter)
	return t.window == 0 && !whole && t.e.opts.Limiter == nil && t.e.opts.Threads == 0
}

// tailLen returns the length of t's next range when it belongs to the
// last wave of the run, 0 otherwise. The last wave begins once the
// listing ended and what is left to plan over every object (open, or
// listed and not yet open) fits the slots of the window that are free
// now, this range's among them, in ranges of the part size: what is left
// is then planned in min(free slots, left / tailPiece) equal pieces (so
// each has at least tailPiece bytes), each ending on the multiple of the
// alignment nearest its share, so that the last ranges end together. No range in flight is
// ever cut: the tail is balanced by the sizes of the ranges still to
// plan. Under the lock.
func (s *scheduler) tailLen(t *object) int64 {
	if !t.splittable() || !s.e.listed.Load() {
		return 0
	}
	left := s.e.unopened.Load()
	for _, u := range s.open {
		left += u.o.Size - u.next
	}
	free := int64(s.e.gate.bound()-s.e.gate.inFlightNow()) + 1 // the slot this range holds
	if left <= 0 || free <= 1 || left > free*t.partSize {
		return 0
	}
	k := min(free, max(left/tailPiece, 1))
	end := (t.next + ceilDiv(left, k) + t.align/2) / t.align * t.align
	return max(end-t.next, t.align)
}

// fitJournal fits the range [off, off+n) to the extents an earlier run
// journaled: a range planned where one begins covers at least it, and
// none runs into the next, so a rerun plans those extents exactly as
// they were recorded and fetches no byte twice.
func (t *object) fitJournal(off, n int64) int64 {
	j, ok := t.f.(Extents)
	if !ok {
		return n
	}
	have, next := j.Extent(off)
	n = max(n, have)
	if next > off && next < off+n {
		n = next - off
	}
	return min(n, t.o.Size-off)
}

// alignOf is what the boundaries of f's tail pieces are multiples of.
func alignOf(f File) int64 {
	a := int64(tailAlign)
	if al, ok := f.(Aligner); ok && al.Align() > 0 {
		b := al.Align()
		a = a / gcd(a, b) * b
	}
	return a
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
