package checksum

import (
	"fmt"
	"sync"
)

// Ordered combines the CRCs of an object's parts into the CRC of the whole
// object as the parts complete, in any order, holding only those that
// completed before a part that precedes them: its memory is bounded by the
// parts in flight, not by the object's number of parts (Parts keeps one
// slot per part). Set may be called concurrently; it takes a lock once per
// part, not per chunk.
type Ordered struct {
	size int64

	mu      sync.Mutex
	acc     Running           // the parts joined so far, from offset 0
	pending map[int64]Running // completed parts not yet joined, by offset
	misuse  error
}

// NewOrdered returns an Ordered for an object of size bytes. It panics if
// alg is not supported.
func NewOrdered(alg Algorithm, size int64) *Ordered {
	if kindOf(alg) == kindNone {
		panic("checksum: NewOrdered with unsupported algorithm " + string(alg))
	}
	return &Ordered{size: size, acc: Start(alg), pending: map[int64]Running{}}
}

// Algorithm returns the algorithm the parts are combined with.
func (o *Ordered) Algorithm() Algorithm { return o.acc.Algorithm() }

// Set records the CRC of the part that starts at off.
func (o *Ordered) Set(off int64, r Running) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch _, dup := o.pending[off]; {
	case r.k != o.acc.k:
		o.fail(fmt.Errorf("checksum parts: part at %d computed with %s, want %s", off, r.Algorithm(), o.acc.Algorithm()))
		return
	case off < o.acc.n || dup:
		o.fail(fmt.Errorf("checksum parts: part at %d set twice or overlapping", off))
		return
	case off+r.n > o.size:
		o.fail(fmt.Errorf("checksum parts: part at %d of %d bytes runs past the object's %d", off, r.n, o.size))
		return
	}
	if off != o.acc.n {
		o.pending[off] = r
		return
	}
	o.acc = o.acc.Join(r)
	for {
		next, ok := o.pending[o.acc.n]
		if !ok {
			return
		}
		delete(o.pending, o.acc.n)
		o.acc = o.acc.Join(next)
	}
}

func (o *Ordered) fail(err error) {
	if o.misuse == nil {
		o.misuse = err
	}
}

// Sum returns the CRC of the whole object, or an error if the parts set do
// not cover it exactly once.
func (o *Ordered) Sum() (uint64, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case o.misuse != nil:
		return 0, o.misuse
	case o.acc.n != o.size || len(o.pending) > 0:
		return 0, fmt.Errorf("checksum parts: %d of %d bytes covered in order (%d parts after a gap)", o.acc.n, o.size, len(o.pending))
	}
	return o.acc.Sum(), nil
}
