package shard

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// withRepeats is l with repeats of some of its keys added at random
// places: some as listed, some with another size or none (the first
// entry's size wins), some of a size placed whole where the first is
// small, and the other way round.
func withRepeats(seed uint64, l sliceLister) sliceLister {
	r := rand.New(rand.NewPCG(seed, 3))
	out := slices.Clone(l)
	for range len(l) / 3 {
		o := l[r.IntN(len(l))]
		switch r.IntN(4) {
		case 1:
			o.Size = -1
		case 2:
			o.Size = 200 * MiB // larger than any share's 1/64
		case 3:
			o.Size = 1
		}
		at := r.IntN(len(out) + 1) // after its first entry, which the copy must follow
		for at <= indexOf(out, o.Key) {
			at = r.IntN(len(out) + 1)
		}
		out = append(out[:at], append(sliceLister{o}, out[at:]...)...)
	}
	return out
}

func indexOf(l sliceLister, key string) int {
	for i, o := range l {
		if o.Key == key {
			return i
		}
	}
	return -1
}

// TestSplitDropsRepeats: a listing that names keys twice (with the
// same size, another, none, one placed whole) is split as the listing
// of the first entry of each key: each shard emits what it would emit
// of that listing, in the same order, the figures and set hashes are
// that listing's, and the fleet check passes.
func TestSplitDropsRepeats(t *testing.T) {
	for _, n := range []int{1, 3, 7} {
		for seed := range uint64(3) {
			base := listing(20+seed, 300, 1*MiB, 4*MiB, 64*MiB)
			l := withRepeats(seed, base)
			if len(l) == len(base) {
				t.Fatal("no repeats to test")
			}
			fleet(t, l, n) // every key once, its first entry; Check passes
			for k := range n {
				got, rep := runShard(t, l, Spec{k, n}, Options{})
				want, wantRep := runShard(t, firsts(l), Spec{k, n}, Options{})
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("seed %d, shard %d/%d: emitted %d objects, the listing without repeats %d (or others)", seed, k, n, len(got), len(want))
				}
				if rep != wantRep {
					t.Fatalf("seed %d, shard %d/%d: report %+v, without repeats %+v", seed, k, n, rep, wantRep)
				}
			}
		}
	}
}

// TestSplitOfRepeatsIsOrderFree: repeats that name a key with its size
// leave the split what it is for the listing in any order.
func TestSplitOfRepeatsIsOrderFree(t *testing.T) {
	base := listing(30, 400, 1, 1*MiB, 64*MiB)
	l := append(slices.Clone(base), base[:100]...)
	l = append(l, base[50:150]...)
	shuffled := slices.Clone(l)
	rand.New(rand.NewPCG(4, 4)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	for k := range 5 {
		a, ra := runShard(t, base, Spec{k, 5}, Options{})
		b, rb := runShard(t, shuffled, Spec{k, 5}, Options{})
		if ra != rb {
			t.Fatalf("shard %d/5: report %+v of the listing, %+v shuffled with repeats", k, ra, rb)
		}
		if !reflect.DeepEqual(sortedKeys(a), sortedKeys(b)) {
			t.Fatalf("shard %d/5: different objects shuffled with repeats", k)
		}
	}
}

func sortedKeys(l []transfer.Object) []string {
	var out []string
	for _, o := range l {
		out = append(out, o.Key)
	}
	slices.Sort(out)
	return out
}

// TestRepeatsFilterNeverMissesARepeat: as the filter grows every repeat
// is suspected, and about 1% of the first entries are.
func TestRepeatsFilterNeverMissesARepeat(t *testing.T) {
	r := newRepeats()
	const keys = 300_000
	var i int64
	suspected := 0
	for k := range keys {
		if !r.first(i, r.fingerprint(fmt.Sprintf("k/%d", k))) {
			suspected++
		}
		i++
		if k%7 == 0 { // a repeat of a key listed at any time before
			j := rand.IntN(k + 1)
			if r.first(i, r.fingerprint(fmt.Sprintf("k/%d", j))) {
				t.Fatalf("entry %d, a repeat of key %d, is taken for the first of its key", i, j)
			}
			i++
		}
	}
	var bits, held int
	for _, b := range r.filters {
		bits += len(b.bits) * 64
		held += b.keys
	}
	if most := 2*held*bloomBits + bloomStart; held != keys-suspected || bits > most {
		t.Errorf("filters of %d bits hold %d keys, want %d in at most %d bits", bits, held, keys-suspected, most)
	}
	if frac := float64(suspected) / keys; frac > 0.015 {
		t.Errorf("%.1f%% of the first entries suspected, want at most 1.5%%", frac*100)
	}
	if want := keys/7 + 1 + suspected; len(r.uncounted) != want {
		t.Errorf("%d entries left to count, want %d", len(r.uncounted), want)
	}
}
