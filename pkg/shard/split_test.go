package shard

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// sliceLister lists a slice of objects.
type sliceLister []transfer.Object

func (s sliceLister) List(ctx context.Context, emit func(transfer.Object) error) error {
	for _, o := range s {
		if err := emit(o); err != nil {
			return err
		}
	}
	return nil
}

// listing makes count objects with sizes drawn from sizes.
func listing(seed uint64, count int, sizes ...int64) sliceLister {
	r := rand.New(rand.NewPCG(seed, 1))
	var out sliceLister
	for i := range count {
		key := fmt.Sprintf("data/%06d", i)
		out = append(out, transfer.Object{Key: key, Name: key[5:], Size: sizes[r.IntN(len(sizes))], ETag: fmt.Sprintf(`"%x"`, i)})
	}
	return out
}

// mix makes count objects of each size, in key order.
func mix(counts map[int64]int) sliceLister {
	var out sliceLister
	for _, size := range slices.Sorted(mapKeys(counts)) {
		for i := range counts[size] {
			key := fmt.Sprintf("mix/%d/%04d", size, i)
			out = append(out, transfer.Object{Key: key, Name: key[4:], Size: size})
		}
	}
	slices.SortFunc(out, func(a, b transfer.Object) int { return strings.Compare(a.Key, b.Key) })
	return out
}

func mapKeys[K cmp.Ordered, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// modelShards makes a model's files: three small ones and 160 of 4.0 to
// 4.6 GB.
func modelShards(seed uint64) sliceLister {
	r := rand.New(rand.NewPCG(seed, 2))
	out := sliceLister{
		{Key: "model/config.json", Name: "config.json", Size: 1 << 10},
		{Key: "model/tokenizer.json", Name: "tokenizer.json", Size: 7 << 20},
		{Key: "model/model.safetensors.index.json", Name: "model.safetensors.index.json", Size: 120 << 10},
	}
	for i := range 160 {
		key := fmt.Sprintf("model/model-%05d-of-00160.safetensors", i+1)
		out = append(out, transfer.Object{Key: key, Name: key[6:], Size: 4_000_000_000 + r.Int64N(600_000_000)})
	}
	return out
}

// runShard collects what shard spec of l emits.
func runShard(t testing.TB, l transfer.Lister, spec Spec, opts Options) ([]transfer.Object, Report) {
	t.Helper()
	sl, rep := Split(l, spec, opts)
	var got []transfer.Object
	if err := sl.List(context.Background(), func(o transfer.Object) error { got = append(got, o); return nil }); err != nil {
		t.Fatalf("shard %s: %v", spec, err)
	}
	return got, *rep
}

// firsts is l without its repeats: the first entry of each key.
func firsts(l sliceLister) sliceLister {
	seen := map[string]bool{}
	var out sliceLister
	for _, o := range l {
		if !seen[o.Key] {
			seen[o.Key] = true
			out = append(out, o)
		}
	}
	return out
}

// fleet runs every shard of n over l; it fails the test unless each
// emitted what it reports, together every key of l once (its first
// entry), and Check passes.
func fleet(t testing.TB, l sliceLister, n int) ([][]transfer.Object, []Report) {
	t.Helper()
	var union []transfer.Object
	shards := make([][]transfer.Object, n)
	reports := make([]Report, n)
	for k := range n {
		got, rep := runShard(t, l, Spec{k, n}, Options{})
		var bytes int64
		for _, o := range got {
			bytes += max(o.Size, 0)
		}
		if rep.Objects != int64(len(got)) || rep.Bytes != bytes || !rep.Done() {
			t.Fatalf("shard %d/%d reports %d objects, %d bytes (done %v); emitted %d, %d", k, n, rep.Objects, rep.Bytes, rep.Done(), len(got), bytes)
		}
		union = append(union, got...)
		shards[k], reports[k] = got, rep
	}
	byKey := func(a, b transfer.Object) int {
		return cmp.Or(strings.Compare(a.Key, b.Key), strings.Compare(a.ETag, b.ETag))
	}
	want := firsts(l)
	slices.SortFunc(want, byKey)
	slices.SortFunc(union, byKey)
	if len(union) != len(want) {
		t.Fatalf("the shards emitted %d objects, the listing has %d", len(union), len(want))
	}
	for i := range union {
		if !reflect.DeepEqual(union[i], want[i]) {
			t.Fatalf("object %d of the union: got %+v, want %+v", i, union[i], want[i])
		}
	}
	if p := Check(reports); len(p) > 0 {
		t.Fatalf("Check of a good fleet: %v", p)
	}
	return shards, reports
}

// offEven is how far shard r's bytes are from an even share, as a
// fraction of it.
func offEven(r Report) float64 {
	return float64(r.Bytes)/float64(r.ListingBytes)*float64(r.Shard.N) - 1
}

const MiB = 1 << 20

func TestSplitCoversTheListingOnceInBalance(t *testing.T) {
	for _, tc := range []struct {
		name    string
		l       sliceLister
		n       int
		balance float64 // max deviation of a shard's bytes from 1/n, as a fraction
	}{
		{"100x1, 40x4, 10x16 and 4x64 MiB over 4", mix(map[int64]int{1 * MiB: 100, 4 * MiB: 40, 16 * MiB: 10, 64 * MiB: 4}), 4, 0.02},
		{"1, 4, 16 and 64 MiB over 4", listing(1, 2000, 1*MiB, 4*MiB, 16*MiB, 64*MiB), 4, 0.02},
		{"1, 4, 16 and 64 MiB over 16", listing(2, 4000, 1*MiB, 4*MiB, 16*MiB, 64*MiB), 16, 0.02},
		{"one size over 7", listing(3, 1000, 1000), 7, 0.01},
		{"a model over 8", modelShards(1), 8, 0.05},
		{"a model over 16", modelShards(2), 16, 0.05},
		{"more shards than objects", listing(4, 3, 10, 20), 5, -1},
		{"empty objects only", listing(5, 10, 0), 3, -1},
		{"one large object and empty ones", append(listing(11, 5, 0), transfer.Object{Key: "z", Name: "z", Size: 100 * MiB}), 3, -1},
		{"objects listed twice", func() sliceLister {
			l := listing(13, 60, 1*MiB, 64*MiB)
			return append(l, l[0], l[1], l[2])
		}(), 3, -1},
		{"nothing", nil, 4, -1},
		{"one shard", listing(6, 50, 1, 1000, 1e6), 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, reports := fleet(t, tc.l, tc.n)
			for _, r := range reports {
				if dev := offEven(r); tc.balance >= 0 && r.ListingBytes > 0 && (dev > tc.balance || dev < -tc.balance) {
					t.Errorf("shard %s: %d bytes of %d, %.2f%% off an even share, want within %.0f%%", r.Shard, r.Bytes, r.ListingBytes, dev*100, tc.balance*100)
				}
			}
		})
	}
}

// TestSplitOfAModelOverManyShards: 160 files of 4.0 to 4.6 GB over 64
// shards is 2.5 files a shard, so no split of whole files is within 5%
// of even; the split is as even as whole files allow: each shard holds
// 2 or 3 of them, and no two shards differ by more than the largest.
func TestSplitOfAModelOverManyShards(t *testing.T) {
	l := modelShards(3)
	var largest int64
	for _, o := range l {
		largest = max(largest, o.Size)
	}
	shards, reports := fleet(t, l, 64)
	lo, hi := reports[0].Bytes, reports[0].Bytes
	for k, r := range reports {
		lo, hi = min(lo, r.Bytes), max(hi, r.Bytes)
		var files int
		for _, o := range shards[k] {
			if o.Size > 1<<30 {
				files++
			}
		}
		if files < 2 || files > 3 {
			t.Errorf("shard %s holds %d of the 160 large files, want 2 or 3", r.Shard, files)
		}
		if r.Bytes > r.ListingBytes/64+largest {
			t.Errorf("shard %s: %d bytes, more than an even share (%d) and the largest file (%d)", r.Shard, r.Bytes, r.ListingBytes/64, largest)
		}
	}
	if hi-lo > largest {
		t.Errorf("shards of %d to %d bytes: they differ by more than the largest file (%d)", lo, hi, largest)
	}
}

// TestSplitBound checks the bound docs/SCALE-OUT.md states on listings
// of sizes spread over six orders of magnitude: no shard holds more
// than an even share and the larger of T/(64N) and the largest object,
// and when the objects placed whole fill no shard past an even share,
// every shard is within T/(64N) of it.
func TestSplitBound(t *testing.T) {
	for seed := range uint64(12) {
		r := rand.New(rand.NewPCG(seed, 3))
		n := 1 + r.IntN(40)
		var l sliceLister
		var largest int64
		for i := range 50 + r.IntN(400) {
			size := int64(1) << r.IntN(26)
			key := fmt.Sprintf("b/%d", i)
			l = append(l, transfer.Object{Key: key, Name: key, Size: size})
			largest = max(largest, size)
		}
		t.Run(fmt.Sprintf("seed %d over %d", seed, n), func(t *testing.T) {
			_, reports := fleet(t, l, n)
			tl := newTally(n)
			var buf []byte
			for _, o := range l {
				var h Hash
				h, buf = entryHash(o, buf)
				tl.add(o.Size, h)
			}
			p := newPlan(tl, 0)
			fits := true
			for _, ld := range p.load {
				fits = fits && ld*int64(n) <= p.total
			}
			even := float64(p.total) / float64(n)
			for _, r := range reports {
				off := float64(r.Bytes) - even
				if off > float64(max(p.large, largest)) {
					t.Errorf("shard %s: %d bytes, %.0f over an even share, more than max(%d, %d)", r.Shard, r.Bytes, off, p.large, largest)
				}
				if fits && (off >= float64(p.large) || -off >= float64(p.large)) {
					t.Errorf("shard %s: %d bytes, %.0f off an even share %.0f, want within %d", r.Shard, r.Bytes, off, even, p.large)
				}
			}
		})
	}
}

func TestSplitIsIndependentOfOrder(t *testing.T) {
	l := listing(7, 3000, 1*MiB, 4*MiB, 16*MiB, 64*MiB, 0)
	shuffled := slices.Clone(l)
	rand.New(rand.NewPCG(7, 7)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	reversed := slices.Clone(l)
	slices.Reverse(reversed)
	for k := range 5 {
		a, ra := runShard(t, l, Spec{k, 5}, Options{})
		keys := func(objs []transfer.Object) []string {
			var out []string
			for _, o := range objs {
				out = append(out, o.Key)
			}
			slices.Sort(out)
			return out
		}
		for name, other := range map[string]sliceLister{"again": l, "shuffled": shuffled, "reversed": reversed} {
			b, rb := runShard(t, other, Spec{k, 5}, Options{})
			if !slices.Equal(keys(a), keys(b)) || ra != rb {
				t.Fatalf("shard %d/5 of the listing %s differs: %+v vs %+v", k, name, ra, rb)
			}
		}
	}
}

func TestSplitAppliesTheFilterFirst(t *testing.T) {
	l := listing(8, 200, 10, 1000)
	keep := func(o transfer.Object) bool { return !strings.HasSuffix(o.Key, "0") }
	var n int64
	for k := range 3 {
		got, rep := runShard(t, l, Spec{k, 3}, Options{Filter: keep})
		for _, o := range got {
			if !keep(o) {
				t.Fatalf("shard %d emitted %s, which the filter drops", k, o.Key)
			}
		}
		n += rep.Objects
		if rep.ListingObjects != 180 {
			t.Fatalf("listing objects %d, want 180 after the filter", rep.ListingObjects)
		}
	}
	if n != 180 {
		t.Fatalf("the shards hold %d objects, want 180", n)
	}
}

func TestSplitWeighsUnknownSizesByTheListingAlone(t *testing.T) {
	// Every third object has no size in the listing (a manifest entry
	// without one): it weighs the mean of the given sizes, is emitted
	// with its size unknown, and the shards still cover the listing once.
	l := listing(9, 300, 1*MiB, 4*MiB, 16*MiB)
	var known, unsized int64
	for i := range l {
		if i%3 == 0 {
			l[i].Size = -1
			unsized++
		} else {
			known += l[i].Size
		}
	}
	shards, reps := fleet(t, l, 4)
	for k, rep := range reps {
		var n int64
		for _, o := range shards[k] {
			if o.Size < 0 {
				n++
			}
		}
		if rep.ListingBytes != known || rep.ListingUnsized != unsized || rep.Unsized != n {
			t.Fatalf("shard %d: listing %d bytes, %d unsized, own %d unsized; want %d, %d, %d", k, rep.ListingBytes, rep.ListingUnsized, rep.Unsized, known, unsized, n)
		}
		if dev := rep.Share*4 - 1; dev > 0.1 || dev < -0.1 {
			t.Errorf("shard %d/4 has %.1f%% of the weight", k, rep.Share*100)
		}
	}

	// With no size given at all, the split is by count.
	none := listing(10, 103, 1)
	for i := range none {
		none[i].Size = -1
	}
	shards, reps = fleet(t, none, 4)
	for k, rep := range reps {
		if got := len(shards[k]); got < 25 || got > 26 || rep.Unsized != int64(got) || rep.Bytes != 0 {
			t.Fatalf("shard %d/4 of 103 objects of unknown size: %d objects, report %+v", k, got, rep)
		}
	}
}

func TestSpoolRoundTrip(t *testing.T) {
	objs := []transfer.Object{
		{Key: "p/a", Name: "a", Size: 5, ETag: `"e"`, VersionID: "v1", ChecksumAlgorithm: "CRC64NVME", StorageClass: "STANDARD",
			ModTime: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), Checksums: map[string]string{"CRC32C": "AAAAAA=="}},
		{Key: "p/b", Name: "renamed", Size: 0},
		{Key: "", Name: "", Size: 1 << 40},
	}
	sp, err := newSpool(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	for i, o := range objs {
		if err := sp.put(o, Hash{uint64(i), ^uint64(i)}, uint64(i)<<60|7); err != nil {
			t.Fatal(err)
		}
	}
	for pass := range 2 { // a second rewind reads it all again
		if err := sp.rewind(); err != nil {
			t.Fatal(err)
		}
		for i, want := range objs {
			if pass == 1 && i == 1 {
				if _, err := sp.head(); err != nil { // a head alone, its rest skipped
					t.Fatalf("pass %d, object %d: %v", pass, i, err)
				}
				continue
			}
			got, e, err := sp.get()
			if err != nil {
				t.Fatalf("pass %d, object %d: %v", pass, i, err)
			}
			wantHead := head{h: Hash{uint64(i), ^uint64(i)}, fp: uint64(i)<<60 | 7, size: want.Size}
			if !reflect.DeepEqual(got, want) || e != wantHead {
				t.Fatalf("pass %d, object %d: got %+v %+v, want %+v %+v", pass, i, got, e, want, wantHead)
			}
		}
		if _, err := sp.head(); err != io.EOF {
			t.Fatalf("pass %d: after the last object: %v, want io.EOF", pass, err)
		}
	}
}

func TestHashIsOfTheSet(t *testing.T) {
	l := listing(12, 50, 1, 10)
	var fwd, rev, half1, half2 Hash
	var buf []byte
	for i, o := range l {
		var h Hash
		h, buf = entryHash(o, buf)
		fwd = fwd.Plus(h)
		if i%2 == 0 {
			half1 = half1.Plus(h)
		} else {
			half2 = half2.Plus(h)
		}
	}
	for i := len(l) - 1; i >= 0; i-- {
		var h Hash
		h, buf = entryHash(l[i], buf)
		rev = rev.Plus(h)
	}
	if fwd != rev || half1.Plus(half2) != fwd {
		t.Fatalf("the hash depends on order or on grouping: %s, %s, %s", fwd, rev, half1.Plus(half2))
	}
	var back Hash
	if err := back.UnmarshalText([]byte(fwd.String())); err != nil || back != fwd {
		t.Fatalf("text round trip of %s: %s, %v", fwd, back, err)
	}
	// A different size or key is a different set (an ETag is not part
	// of it); a listing with an object twice is not the listing with it
	// once.
	withETag := l[3]
	withETag.ETag = `"other"`
	if a, _ := entryHash(l[3], nil); a != func() Hash { h, _ := entryHash(withETag, nil); return h }() {
		t.Errorf("the ETag changes the entry hash")
	}
	for _, change := range []func(o *transfer.Object){
		func(o *transfer.Object) { o.Size++ },
		func(o *transfer.Object) { o.Key += "x" },
	} {
		o := l[3]
		change(&o)
		h3, _ := entryHash(l[3], nil)
		ho, _ := entryHash(o, nil)
		if h3 == ho {
			t.Errorf("%+v and %+v hash alike", l[3], o)
		}
	}
	h0, _ := entryHash(l[0], nil)
	if fwd.Plus(h0) == fwd {
		t.Error("adding an object again leaves the hash as it was")
	}
}

func TestCheckFindsWhatIsWrong(t *testing.T) {
	l := listing(9, 100, 1, 10, 100)
	_, good := fleet(t, l, 4)
	other := listing(10, 100, 1, 10, 100)
	_, foreign := runShard(t, other, Spec{2, 4}, Options{})
	// One object moved from shard 2 to shard 1 in the reports: the sums
	// still hold, yet shard 1 also keeps it.
	moved1, moved2 := good[1], good[2]
	h, _ := entryHash(l[0], nil)
	moved1.Objects++
	moved1.Bytes += max(l[0].Size, 0)
	moved1.Hash = moved1.Hash.Plus(h)
	older := good[3]
	older.Version = 1
	for _, tc := range []struct {
		name    string
		reports []Report
		want    string
	}{
		{"missing", []Report{good[0], good[1], good[3]}, "missing shard 2/4"},
		{"twice", []Report{good[0], good[1], good[2], good[2], good[3]}, "overlap: shard 2/4 reported twice"},
		{"differing listings", []Report{good[0], good[1], foreign, good[3]}, "differing listings"},
		{"an object in two shards", []Report{good[0], moved1, moved2, good[3]}, "the shards hold 101 objects"},
		{"an object in two shards, counts hidden", []Report{good[0], func() Report { r := moved1; r.Objects--; r.Bytes -= max(l[0].Size, 0); return r }(), moved2, good[3]}, "an object in two shards, or in none"},
		{"another version", []Report{good[0], good[1], good[2], older}, "version 1 of the split"},
		{"none", nil, "no shard summaries"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Check(tc.reports)
			if !strings.Contains(strings.Join(p, "\n"), tc.want) {
				t.Fatalf("got %q, want a problem with %q", p, tc.want)
			}
		})
	}
}
