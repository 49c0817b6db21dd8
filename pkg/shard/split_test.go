package shard

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
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

// runShard collects what shard spec of l emits.
func runShard(t *testing.T, l transfer.Lister, spec Spec, opts Options) ([]transfer.Object, Report) {
	t.Helper()
	sl, rep := Split(l, spec, opts)
	var got []transfer.Object
	if err := sl.List(context.Background(), func(o transfer.Object) error { got = append(got, o); return nil }); err != nil {
		t.Fatalf("shard %s: %v", spec, err)
	}
	return got, *rep
}

const MiB = 1 << 20

func TestSplitCoversTheListingOnceInBalance(t *testing.T) {
	for _, tc := range []struct {
		name    string
		l       sliceLister
		n       int
		balance float64 // max deviation of a shard's bytes from 1/n, as a fraction
	}{
		{"1, 4, 16 and 64 MiB over 4", listing(1, 2000, 1*MiB, 4*MiB, 16*MiB, 64*MiB), 4, 0.05},
		{"1, 4, 16 and 64 MiB over 16", listing(2, 4000, 1*MiB, 4*MiB, 16*MiB, 64*MiB), 16, 0.05},
		{"one size over 7", listing(3, 1000, 1000), 7, 0.01},
		{"more shards than objects", listing(4, 3, 10, 20), 5, -1},
		{"empty objects only", listing(5, 10, 0), 3, -1},
		{"nothing", nil, 4, -1},
		{"one shard", listing(6, 50, 1, 1000, 1e6), 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var union []transfer.Object
			var reports []Report
			var total int64
			for _, o := range tc.l {
				total += o.Size
			}
			for k := range tc.n {
				got, rep := runShard(t, tc.l, Spec{k, tc.n}, Options{})
				union = append(union, got...)
				reports = append(reports, rep)
				if rep.Objects != int64(len(got)) {
					t.Errorf("shard %d reports %d objects, emitted %d", k, rep.Objects, len(got))
				}
				if tc.balance >= 0 && total > 0 {
					dev := float64(rep.Bytes)/float64(total)*float64(tc.n) - 1
					if dev > tc.balance || dev < -tc.balance {
						t.Errorf("shard %d/%d: %d bytes of %d, %.2f%% off an even share, want within %.0f%%", k, tc.n, rep.Bytes, total, dev*100, tc.balance*100)
					}
				}
				if len(got) > 0 && (rep.FirstKey != got[0].Key || rep.LastKey != got[len(got)-1].Key) {
					t.Errorf("shard %d: first/last key %q/%q, emitted %q..%q", k, rep.FirstKey, rep.LastKey, got[0].Key, got[len(got)-1].Key)
				}
			}
			if len(union) != len(tc.l) {
				t.Fatalf("the shards emitted %d objects, the listing has %d", len(union), len(tc.l))
			}
			for i := range union {
				if !reflect.DeepEqual(union[i], tc.l[i]) {
					t.Fatalf("object %d: got %+v, want %+v", i, union[i], tc.l[i])
				}
			}
			if p := Check(reports); len(p) > 0 {
				t.Fatalf("Check of a good fleet: %v", p)
			}
		})
	}
}

func TestSplitIsDeterministic(t *testing.T) {
	l := listing(7, 500, 1*MiB, 4*MiB, 16*MiB, 64*MiB)
	for k := range 4 {
		a, ra := runShard(t, l, Spec{k, 4}, Options{})
		b, rb := runShard(t, l, Spec{k, 4}, Options{})
		if !reflect.DeepEqual(a, b) || ra != rb {
			t.Fatalf("shard %d/4 differs between two runs: %v vs %v", k, ra, rb)
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
	var reps []Report
	var next int
	for k := range 4 {
		got, rep := runShard(t, l, Spec{k, 4}, Options{})
		var n int64
		for _, o := range got {
			if o.Key != l[next].Key || o.Size != l[next].Size {
				t.Fatalf("shard %d emitted %s (%d bytes), want %s (%d)", k, o.Key, o.Size, l[next].Key, l[next].Size)
			}
			if o.Size < 0 {
				n++
			}
			next++
		}
		if rep.ListingBytes != known || rep.ListingUnsized != unsized || rep.Unsized != n {
			t.Fatalf("shard %d: listing %d bytes, %d unsized, own %d unsized; want %d, %d, %d", k, rep.ListingBytes, rep.ListingUnsized, rep.Unsized, known, unsized, n)
		}
		if dev := rep.Share*4 - 1; dev > 0.1 || dev < -0.1 {
			t.Errorf("shard %d/4 has %.1f%% of the weight", k, rep.Share*100)
		}
		reps = append(reps, rep)
	}
	if next != len(l) {
		t.Fatalf("the shards emitted %d objects, the listing has %d", next, len(l))
	}
	if p := Check(reps); len(p) != 0 {
		t.Fatalf("check: %v", p)
	}

	// With no size given at all, the split is by count.
	none := listing(10, 103, 1)
	for i := range none {
		none[i].Size = -1
	}
	for k := range 4 {
		got, rep := runShard(t, none, Spec{k, 4}, Options{})
		if len(got) < 25 || len(got) > 26 || rep.Unsized != int64(len(got)) || rep.Bytes != 0 {
			t.Fatalf("shard %d/4 of 103 objects of unknown size: %d objects, report %+v", k, len(got), rep)
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
	for _, o := range objs {
		if err := sp.put(o); err != nil {
			t.Fatal(err)
		}
	}
	if err := sp.rewind(); err != nil {
		t.Fatal(err)
	}
	for i, want := range objs {
		got, err := sp.get()
		if err != nil {
			t.Fatalf("object %d: %v", i, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("object %d: got %+v, want %+v", i, got, want)
		}
	}
}

func TestCheckFindsWhatIsWrong(t *testing.T) {
	l := listing(9, 100, 1, 10, 100)
	var good []Report
	for k := range 4 {
		_, rep := runShard(t, l, Spec{k, 4}, Options{})
		good = append(good, rep)
	}
	other := listing(10, 100, 1, 10, 100)
	_, foreign := runShard(t, other, Spec{2, 4}, Options{})
	shifted := good[2]
	shifted.Index++
	shifted.Objects--
	for _, tc := range []struct {
		name    string
		reports []Report
		want    string
	}{
		{"missing", []Report{good[0], good[1], good[3]}, "missing shard 2/4"},
		{"twice", []Report{good[0], good[1], good[2], good[2], good[3]}, "overlap: shard 2/4 reported twice"},
		{"differing listings", []Report{good[0], good[1], foreign, good[3]}, "differing listings"},
		{"gap", []Report{good[0], good[1], shifted, good[3]}, "gap"},
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
