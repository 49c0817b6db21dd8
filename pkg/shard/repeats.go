package shard

import (
	"hash/maphash"
	"math/bits"
)

// A listing may name a key twice: a manifest whose lines were joined
// from two sources, a listing that repeats an entry. The split keeps
// the first entry of each key in listing order and drops the others
// (its repeats) before it counts anything, so that the listing's
// figures and set hash count each key once, and the split is the one of
// the listing without them.
//
// Finding them exactly takes 2 to 4 bytes a key, not a digest per key:
// the first pass looks a fingerprint of the key up in a Bloom filter
// and notes the fingerprints it finds (every key named before, and
// about 1% of the others); a second pass over the spooled heads, made
// only when there is such a fingerprint, compares the entries that have
// one by their whole key. An entry whose fingerprint the filter did not
// hold is the first of its key for certain and is counted in the first
// pass; the others are counted in the second, once found to be firsts.

// The filter is scalable: a run of Bloom filters, each bloomGrowth
// times the one before, the first of bloomStart bits; a key goes into
// the last, which holds at most one key per bloomBits bits, and is
// looked up in all: 2 to 4 bytes a key. A full filter suspects about
// 0.24% of the keys it does not hold ((1-e^(-4/16))^4), so a million
// keys (six filters, 2.1 MB) are suspected at about 1%.
const (
	bloomProbes = 4
	bloomBits   = 16
	bloomStart  = 1 << 18
	bloomGrowth = 2
)

// bloom is one Bloom filter of fingerprints.
type bloom struct {
	bits []uint64 // its length in bits is a power of two
	keys int
}

// probe is fp's j-th bit in b: its word and the bit in it.
func (b *bloom) probe(fp uint64, j uint64) (*uint64, uint64) {
	i := (fp + j*(bits.RotateLeft64(fp, 32)|1)) & uint64(len(b.bits)*64-1)
	return &b.bits[i/64], uint64(1) << (i % 64)
}

func (b *bloom) has(fp uint64) bool {
	for j := range uint64(bloomProbes) {
		if w, bit := b.probe(fp, j); *w&bit == 0 {
			return false
		}
	}
	return true
}

func (b *bloom) add(fp uint64) {
	for j := range uint64(bloomProbes) {
		w, bit := b.probe(fp, j)
		*w |= bit
	}
	b.keys++
}

func (b *bloom) full() bool { return b.keys >= len(b.bits)*64/bloomBits }

// repeats is the first pass's part of finding repeated keys.
type repeats struct {
	seed    maphash.Seed
	filters []*bloom
	// suspects are the fingerprints the filter held when an entry of
	// theirs was listed.
	suspects map[uint64]struct{}
	// uncounted are the indices, in listing order, of the entries the
	// first pass left for the second to count.
	uncounted []int64
}

func newRepeats() *repeats {
	return &repeats{seed: maphash.MakeSeed(), filters: []*bloom{{bits: make([]uint64, bloomStart/64)}}, suspects: map[uint64]struct{}{}}
}

// fingerprint is key's 64-bit fingerprint (seeded per process: which
// entries are suspected differs from run to run, what is found never).
func (r *repeats) fingerprint(key string) uint64 { return maphash.String(r.seed, key) }

// first notes entry i of fingerprint fp and says whether it is the
// first of its key for certain; if not, it is the second pass's.
func (r *repeats) first(i int64, fp uint64) bool {
	for _, b := range r.filters {
		if b.has(fp) {
			r.suspects[fp] = struct{}{}
			r.uncounted = append(r.uncounted, i)
			return false
		}
	}
	last := r.filters[len(r.filters)-1]
	if last.full() {
		last = &bloom{bits: make([]uint64, len(last.bits)*bloomGrowth)}
		r.filters = append(r.filters, last)
	}
	last.add(fp)
	return true
}

// suspect says whether entries of fingerprint fp need their keys
// compared.
func (r *repeats) suspect(fp uint64) bool {
	_, ok := r.suspects[fp]
	return ok
}

// second reads the n spooled entries' heads and compares by key those
// of a suspected fingerprint: it counts in t each uncounted entry that
// is the first of its key, and returns the indices of the repeats, in
// listing order. It reads nothing when nothing is suspected.
func (r *repeats) second(sp *spool, n int64, t *tally) ([]int64, error) {
	r.filters = nil // done with: free for the second pass
	if len(r.suspects) == 0 {
		return nil, nil
	}
	if err := sp.rewind(); err != nil {
		return nil, err
	}
	seen := map[string]struct{}{}
	var dropped []int64
	next := 0 // the next of r.uncounted
	for i := range n {
		e, err := sp.head()
		if err != nil {
			return nil, err
		}
		uncounted := next < len(r.uncounted) && r.uncounted[next] == i
		if uncounted {
			next++
		}
		if !r.suspect(e.fp) {
			continue
		}
		o, err := sp.object(e.size)
		if err != nil {
			return nil, err
		}
		if _, again := seen[o.Key]; again {
			dropped = append(dropped, i)
			continue
		}
		seen[o.Key] = struct{}{}
		if uncounted {
			t.add(e.size, e.h)
		}
	}
	return dropped, nil
}
