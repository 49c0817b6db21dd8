package shard

import (
	"cmp"
	"container/heap"
	"math/big"
	"slices"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// The split's constants. Changing one changes every split: bump Version.
const (
	// largeShare: an object of at least T/(largeShare*N) bytes (T the
	// listing's weight) is placed whole, largest first; at most
	// largeShare*N objects are that large, which bounds the memory.
	largeShare = 64
	// bucketBits: the first pass sums the weight of the small objects
	// in 2^bucketBits ranges of their entry hash, the order the small
	// objects are laid out in (few enough to stay in a CPU cache; a
	// process holds the objects of at most two buckets in memory).
	bucketBits = 12
	buckets    = 1 << bucketBits
)

func bucketOf(h Hash) int { return int(h.hi >> (64 - bucketBits)) }

// candidate is an object that may be placed whole: one at least as
// large as the threshold at the time it was listed. Its entry hash
// names it (two objects share one only if they share key and size, so
// only if two keys' hashes collide once the split has dropped repeated
// keys, and then either may go where the other would).
type candidate struct {
	size int64
	h    Hash
}

// candidates is a min-heap by size, so the ones that fall under a
// rising threshold leave first.
type candidates []candidate

func (c candidates) Len() int           { return len(c) }
func (c candidates) Less(i, j int) bool { return c[i].size < c[j].size }
func (c candidates) Swap(i, j int)      { c[i], c[j] = c[j], c[i] }
func (c *candidates) Push(any)          { panic("candidates grow by append and heap.Fix") }
func (c *candidates) Pop() any          { panic("candidates shrink by hand and heap.Fix") }

// tally is what the first pass counts of the listing: every total the
// split needs, by bucket of entry hash, and the objects that may be
// placed whole. None of it depends on the order of the listing.
type tally struct {
	n                     int
	count, known, unsized int64
	listing               Hash
	bucket                []bucketTally
	cands                 candidates
}

// bucketTally counts the objects of one bucket: all of them, their
// given bytes, those without a size.
type bucketTally struct{ count, known, unsized int64 }

func newTally(n int) *tally { return &tally{n: n, bucket: make([]bucketTally, buckets)} }

// add counts one object of the listing, of size bytes (-1: not given)
// and entry hash h, in any order. An object at least as large as
// known/(largeShare*N), the bytes so far, stays a candidate until the
// threshold passes it: the final threshold is no lower, so every object
// at least as large as it is among the candidates at the end, and the
// candidates' sizes add up to at most the bytes listed, so there are at
// most about largeShare*N of them.
func (t *tally) add(size int64, h Hash) {
	t.count++
	t.listing = t.listing.Plus(h)
	b := &t.bucket[bucketOf(h)]
	b.count++
	if size < 0 {
		t.unsized++
		b.unsized++
		return
	}
	t.known += size
	b.known += size
	floor := max(1, t.known/(largeShare*int64(t.n)))
	if size >= floor {
		t.cands = append(t.cands, candidate{size, h})
		heap.Fix(&t.cands, len(t.cands)-1)
	}
	for len(t.cands) > 0 && t.cands[0].size < floor {
		last := len(t.cands) - 1
		t.cands[0] = t.cands[last]
		t.cands = t.cands[:last]
		if last > 0 {
			heap.Fix(&t.cands, 0)
		}
	}
}

// plan is the split of one listing, the same in every process that
// counted the same objects, and what shard k of it takes.
type plan struct {
	n, k  int
	mean  int64 // the weight of an object without a size
	total int64 // the listing's weight: given sizes, and mean for each unsized object
	large int64 // objects of at least this many bytes are placed whole
	// load is each shard's bytes placed whole.
	load []int64
	// owner holds, by entry hash, the shards of the objects placed
	// whole of that hash (one: the split has dropped repeated keys, so
	// two share a hash only if their hashes collide) of which one is
	// shard k's: a process keeps only its own.
	owner map[Hash][]int
	// byCount: the small objects hold no bytes, so they are split by
	// count, each weighing 1.
	byCount bool
	// The small objects are laid on one line in the order of their
	// entry hash; starts[b] is where bucket b starts, cuts[k] where
	// shard k's stretch starts, both doubled (so a midpoint is whole);
	// line is the doubled length.
	starts, cuts []uint64
	line         uint64
}

// newPlan splits what t counted over t.n shards: the objects of at
// least large bytes largest first (ties by entry hash) each to the
// shard that holds the fewest bytes so far (ties to the lowest K); then
// the small ones by the midpoint rule over the stretches, one per
// shard, each as long as what the shard still lacks of an even share
// (scaled to the small objects' weight when the whole objects overfill
// some shards).
func newPlan(t *tally, k int) *plan {
	p := &plan{n: t.n, k: k, mean: unsizedWeight(t.count-t.unsized, t.known), owner: map[Hash][]int{}}
	p.total = t.known + t.unsized*p.mean
	n64 := int64(largeShare * t.n)
	p.large = max(1, p.total/n64+min(1, p.total%n64))
	p.load = p.placeWhole(t)
	weight := make([]int64, buckets)
	var small int64
	for b, bt := range t.bucket {
		weight[b] = bt.known + bt.unsized*p.mean
		small += weight[b]
	}
	if small == 0 {
		p.byCount = true
		for b, bt := range t.bucket {
			weight[b] = bt.count
			small += weight[b]
		}
	}
	p.starts = make([]uint64, buckets+1)
	for b := range buckets {
		p.starts[b+1] = p.starts[b] + 2*uint64(weight[b])
	}
	p.line = 2 * uint64(small)
	p.cuts = cuts(p.total, uint64(small), p.load, p.byCount)
	return p
}

// placeWhole assigns the objects of at least p.large bytes, removes
// them from t's buckets and returns each shard's bytes.
func (p *plan) placeWhole(t *tally) []int64 {
	var whole []candidate
	for _, c := range t.cands {
		if c.size >= p.large {
			whole = append(whole, c)
		}
	}
	slices.SortFunc(whole, func(a, b candidate) int {
		return cmp.Or(cmp.Compare(b.size, a.size), cmp.Compare(a.h.hi, b.h.hi), cmp.Compare(a.h.lo, b.h.lo))
	})
	lightest := make(shardLoads, t.n)
	for k := range lightest {
		lightest[k].k = k
	}
	shard := make([]int, len(whole))
	for i, c := range whole {
		s := &lightest[0]
		shard[i] = s.k
		s.bytes += c.size
		heap.Fix(&lightest, 0)
		b := &t.bucket[bucketOf(c.h)]
		b.count--
		b.known -= c.size
	}
	for i := 0; i < len(whole); {
		j := i + 1
		for j < len(whole) && whole[j].h == whole[i].h {
			j++
		}
		if slices.Contains(shard[i:j], p.k) {
			p.owner[whole[i].h] = shard[i:j]
		}
		i = j
	}
	load := make([]int64, t.n)
	for _, s := range lightest {
		load[s.k] = s.bytes
	}
	return load
}

// cuts returns the doubled start of each shard's stretch of the small
// objects' line (small long), and its end: shard k's stretch is as long
// as its deficit, total - N*load[k] when positive, scaled so that the
// stretches fill the line; with byCount all are even.
func cuts(total int64, small uint64, load []int64, byCount bool) []uint64 {
	n := len(load)
	out := make([]uint64, n+1)
	deficit := make([]*big.Int, n)
	sum := new(big.Int)
	for k := range n {
		d := big.NewInt(1)
		if !byCount {
			d.Mul(big.NewInt(int64(n)), big.NewInt(load[k]))
			d.Sub(big.NewInt(total), d)
			if d.Sign() < 0 {
				d.SetInt64(0)
			}
		}
		deficit[k] = d
		sum.Add(sum, d)
	}
	if sum.Sign() == 0 {
		return out // nothing lacks: no small object has weight
	}
	cum, at, s := new(big.Int), new(big.Int), new(big.Int).SetUint64(small)
	for k := range n {
		cum.Add(cum, deficit[k])
		at.Mul(s, cum)
		at.Quo(at, sum)
		out[k+1] = 2 * at.Uint64()
	}
	return out
}

// shardLoads is a min-heap of shards by bytes, then K.
type shardLoads []struct {
	k     int
	bytes int64
}

func (s shardLoads) Len() int { return len(s) }
func (s shardLoads) Less(i, j int) bool {
	return s[i].bytes < s[j].bytes || s[i].bytes == s[j].bytes && s[i].k < s[j].k
}
func (s shardLoads) Swap(i, j int) { s[i], s[j] = s[j], s[i] }
func (s *shardLoads) Push(any)     { panic("shardLoads has a fixed length") }
func (s *shardLoads) Pop() any     { panic("shardLoads has a fixed length") }

// whole says whether an object of size bytes is placed whole.
func (p *plan) whole(size int64) bool { return size >= p.large }

// mineWhole says whether the next copy of the object placed whole with
// entry hash h is shard k's.
func (p *plan) mineWhole(h Hash) bool {
	owners := p.owner[h]
	if len(owners) == 0 {
		return false
	}
	p.owner[h] = owners[1:]
	return owners[0] == p.k
}

// weight is what a small object weighs on the line.
func (p *plan) weight(o transfer.Object) int64 {
	switch {
	case p.byCount:
		return 1
	case o.Size < 0:
		return p.mean
	}
	return o.Size
}

// bytesWeight is what o weighs in the listing's total.
func (p *plan) bytesWeight(o transfer.Object) int64 {
	if o.Size < 0 {
		return p.mean
	}
	return o.Size
}

// midpoint is the doubled midpoint of an object of weight w that starts
// at doubled position at, held inside the line: a last empty object
// counts as the line's last byte.
func (p *plan) midpoint(at uint64, w int64) uint64 {
	return min(at+uint64(w), p.line-1)
}

// in says whether the doubled midpoint m lies in shard k's stretch.
func (p *plan) in(m uint64) bool { return p.cuts[p.k] <= m && m < p.cuts[p.k+1] }

// Where the small objects of a bucket go, for one shard.
const (
	bucketOthers = iota // every object in it is another shard's
	bucketMine          // every object in it is this shard's
	bucketSplit         // a cut falls in it: its objects are placed one by one
)

// classify says, for shard k, where each bucket's small objects go. A
// bucket's objects have their midpoints between its start and end, so
// at most the two buckets that hold shard k's cuts are split.
func (p *plan) classify() []uint8 {
	k := p.k
	out := make([]uint8, buckets)
	if p.line == 0 {
		return out
	}
	for b := range buckets {
		lo, hi := p.midpoint(p.starts[b], 0), p.midpoint(p.starts[b+1], 0)
		switch {
		case p.cuts[k] <= lo && hi < p.cuts[k+1]:
			out[b] = bucketMine
		case hi < p.cuts[k] || lo >= p.cuts[k+1]:
			out[b] = bucketOthers
		default:
			out[b] = bucketSplit
		}
	}
	return out
}

// unsizedWeight is what an object of unknown size weighs in the split:
// the mean of the sizes the listing gives (sized objects of known
// bytes), at least 1.
func unsizedWeight(sized, known int64) int64 {
	if sized == 0 {
		return 1
	}
	return max(1, known/sized)
}
