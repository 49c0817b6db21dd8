package extsort

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// TestSortInRuns sorts more records than fit in memory: they go to runs
// on disk and come back merged, in key order, each once, equal keys in
// the order they were added.
func TestSortInRuns(t *testing.T) {
	for _, n := range []int{0, 1, 10, 5000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(n), 7))
			s := New(t.TempDir(), 4096)
			var want []string
			for i := range n {
				k := fmt.Sprintf("k%04d", rng.IntN(n/2+1))
				v := fmt.Sprintf("%s#%06d", k, i)
				want = append(want, v)
				if err := s.Add(k, []byte(v)); err != nil {
					t.Fatal(err)
				}
			}
			if n == 5000 && s.Runs() < 10 {
				t.Errorf("%d runs for %d records in 4 KiB, want them spilled", s.Runs(), n)
			}
			slices.Sort(want) // the key, then the order of arrival
			var got []string
			err := s.Each(func(key string, val []byte) error {
				got = append(got, string(val))
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Errorf("got %d records, want %d in order; first %q", len(got), len(want), got[:min(5, len(got))])
			}
		})
	}
}

type shuffled []transfer.Object

func (s shuffled) List(ctx context.Context, emit func(transfer.Object) error) error {
	for _, o := range s {
		if err := emit(o); err != nil {
			return err
		}
	}
	return nil
}

// TestSortedLister checks that Sorted emits every object of an unordered
// listing, whole, in key order.
func TestSortedLister(t *testing.T) {
	var in shuffled
	for i := range 3000 {
		in = append(in, transfer.Object{Key: fmt.Sprintf("p/%05d", (i*7919)%3000), Name: fmt.Sprint(i), Size: int64(i),
			ETag: `"e"`, ModTime: time.Unix(int64(i), 0).UTC(), Checksums: map[string]string{"CRC32": "AAAA"}})
	}
	in[5].Err = errors.New("bad size")
	var got []transfer.Object
	err := Sorted(in, t.TempDir(), 8192).List(context.Background(), func(o transfer.Object) error {
		got = append(got, o)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(in) || !slices.IsSortedFunc(got, func(a, b transfer.Object) int { return strings.Compare(a.Key, b.Key) }) {
		t.Fatalf("got %d objects, want %d in key order", len(got), len(in))
	}
	for _, o := range got {
		var i int
		fmt.Sscan(o.Name, &i)
		want := in[i]
		if o.Key != want.Key || o.Size != want.Size || !o.ModTime.Equal(want.ModTime) || o.Checksums["CRC32"] != "AAAA" || (o.Err == nil) != (want.Err == nil) {
			t.Fatalf("object %d came back as %+v, want %+v", i, o, want)
		}
	}
}
