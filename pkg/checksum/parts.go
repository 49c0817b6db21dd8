package checksum

import (
	"errors"
	"fmt"
	"sort"
	"sync/atomic"
)

// Parts collects the Running CRCs of the parts of one object, which may
// complete in any order, and combines them in offset order into the CRC of
// the whole object.
//
// Set may be called concurrently for distinct parts without a lock: each
// part owns one slot of a slice. Sum must be called after every Set has
// returned (after the errgroup or WaitGroup that ran the parts is done).
type Parts struct {
	k        kind
	size     int64
	partSize int64   // > 0 for evenly sized parts; 0 when offsets is used
	offsets  []int64 // explicit part starts, ascending, offsets[0] == 0
	slots    []Running
	misuse   atomic.Pointer[error] // first bad Set or construction, reported by Sum
}

// NewParts returns a Parts for an object of size bytes cut into parts of
// partSize bytes from offset 0, the last one possibly shorter. A partSize
// <= 0 means one part covering the whole object; a size of 0 means no parts
// (Sum then returns 0, the CRC of no bytes). A negative size is reported by
// Sum. NewParts panics if alg is not supported. Use NewPartsAt when the parts
// are not all the same size.
func NewParts(alg Algorithm, size, partSize int64) *Parts {
	p := &Parts{k: kindOf(alg), size: size}
	if p.k == kindNone {
		panic("checksum: NewParts with unsupported algorithm " + string(alg))
	}
	switch {
	case size < 0:
		p.fail(fmt.Errorf("checksum parts: negative object size %d", size))
	case size == 0:
	case partSize <= 0 || partSize >= size:
		p.partSize = size
		p.slots = make([]Running, 1)
	default:
		p.partSize = partSize
		p.slots = make([]Running, (size+partSize-1)/partSize)
	}
	return p
}

// NewPartsAt returns a Parts for an object of size bytes whose parts start
// at offsets, which must begin at 0, ascend strictly and stay below size
// (each part runs to the next offset, the last to size). For a zero-byte
// object offsets must be empty. It panics if alg is not supported.
func NewPartsAt(alg Algorithm, offsets []int64, size int64) (*Parts, error) {
	p := &Parts{k: kindOf(alg), size: size}
	if p.k == kindNone {
		panic("checksum: NewPartsAt with unsupported algorithm " + string(alg))
	}
	switch {
	case size < 0:
		return nil, fmt.Errorf("checksum parts: negative object size %d", size)
	case size == 0 && len(offsets) != 0:
		return nil, fmt.Errorf("checksum parts: %d part offsets for an empty object", len(offsets))
	case size > 0 && (len(offsets) == 0 || offsets[0] != 0):
		return nil, errors.New("checksum parts: first part does not start at offset 0")
	}
	for i := 1; i < len(offsets); i++ {
		if offsets[i] <= offsets[i-1] || offsets[i] >= size {
			return nil, fmt.Errorf("checksum parts: part offset %d at index %d out of order or not below size %d", offsets[i], i, size)
		}
	}
	p.offsets = append([]int64(nil), offsets...)
	p.slots = make([]Running, len(offsets))
	return p, nil
}

// Algorithm returns the algorithm the parts are combined with.
func (p *Parts) Algorithm() Algorithm { return params[p.k].alg }

// fail records the first misuse for Sum to report.
func (p *Parts) fail(err error) { p.misuse.CompareAndSwap(nil, &err) }

// index returns the slot of the part starting at off, or -1.
func (p *Parts) index(off int64) int {
	if off < 0 || off >= p.size {
		return -1
	}
	if p.offsets == nil {
		if off%p.partSize != 0 {
			return -1
		}
		return int(off / p.partSize)
	}
	i := sort.Search(len(p.offsets), func(i int) bool { return p.offsets[i] >= off })
	if i == len(p.offsets) || p.offsets[i] != off {
		return -1
	}
	return i
}

// bounds returns the start and length of the part in slot i.
func (p *Parts) bounds(i int) (start, n int64) {
	if p.offsets == nil {
		start = int64(i) * p.partSize
		return start, min(p.partSize, p.size-start)
	}
	end := p.size
	if i+1 < len(p.offsets) {
		end = p.offsets[i+1]
	}
	return p.offsets[i], end - p.offsets[i]
}

// Set records r as the CRC of the whole part that starts at offset off,
// replacing any earlier value for that part (a part that was retried from
// scratch is simply Set again). It does not allocate when used correctly.
// An offset that is not the start of a part, or an r of another algorithm,
// is remembered and reported by Sum; lengths are checked by Sum.
func (p *Parts) Set(off int64, r Running) {
	i := p.index(off)
	switch {
	case i < 0:
		p.fail(fmt.Errorf("checksum parts: set at offset %d, which is not the start of a part", off))
	case r.k != p.k:
		p.fail(fmt.Errorf("checksum parts: set at offset %d with a %q CRC, want %s", off, r.Algorithm(), params[p.k].alg))
	default:
		p.slots[i] = r
	}
}

// Sum returns the CRC of the whole object, combining the parts in offset
// order. It fails if a part was never Set, if a part's length differs from
// the length of the part it was Set for (so lengths add up to the object's
// size), or if a Set was misused.
func (p *Parts) Sum() (uint64, error) {
	if e := p.misuse.Load(); e != nil {
		return 0, *e
	}
	cp := &params[p.k]
	var crc uint64
	lastLen, shift := uint64(0), cp.top // x^(8*lastLen) mod P, reused while lengths repeat
	for i, r := range p.slots {
		start, n := p.bounds(i)
		if r.k == kindNone {
			return 0, fmt.Errorf("checksum parts: part at offset %d (%d bytes) missing", start, n)
		}
		if r.n != n {
			return 0, fmt.Errorf("checksum parts: part at offset %d has %d bytes, want %d", start, r.n, n)
		}
		if i == 0 {
			crc = r.crc
			continue
		}
		if uint64(n) != lastLen {
			lastLen, shift = uint64(n), cp.x8nmod(uint64(n))
		}
		crc = (cp.mulmod(shift, crc) ^ r.crc) & cp.mask
	}
	return crc, nil
}
