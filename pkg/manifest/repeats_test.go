package manifest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// TestRepeatsListsEveryEntry: by default a key named twice is listed
// once, its first entry; with Repeats every entry is listed, in order,
// so that a split can keep the first of each key itself. Both with and
// without lookups.
func TestRepeatsListsEveryEntry(t *testing.T) {
	man := "p/a\t1\np/b\t2\ns3://b/p/a\t3\np/c\np/a\n"
	for _, tc := range []struct {
		repeats, unresolved bool
		want                []string
	}{
		{false, false, []string{"p/a:1", "p/b:2", "p/c:30"}},
		{false, true, []string{"p/a:1", "p/b:2", "p/c:-1"}},
		{true, false, []string{"p/a:1", "p/b:2", "p/a:3", "p/c:30", "p/a:10"}},
		{true, true, []string{"p/a:1", "p/b:2", "p/a:3", "p/c:-1", "p/a:-1"}},
	} {
		src := &objects{sizes: map[string]int64{"p/a": 10, "p/c": 30}}
		l := New(Options{Location: "m", Bucket: "b", Prefix: "p/", Open: files{"m": []byte(man)}.open, Stat: src.stat,
			Unresolved: tc.unresolved, Repeats: tc.repeats})
		got, err := list(t, l)
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, o := range got {
			keys = append(keys, fmt.Sprintf("%s:%d", o.Key, o.Size))
		}
		if strings.Join(keys, " ") != strings.Join(tc.want, " ") {
			t.Errorf("repeats %v, unresolved %v: listed %v, want %v", tc.repeats, tc.unresolved, keys, tc.want)
		}
	}
}

// TestUnresolvedStopsWhenCancelled: listing unresolved passes entries
// straight on, and still stops soon after its context is done.
func TestUnresolvedStopsWhenCancelled(t *testing.T) {
	var man strings.Builder
	for i := range 10_000 {
		fmt.Fprintf(&man, "p/%05d\t1\n", i)
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := New(Options{Location: "m", Bucket: "b", Prefix: "p/", Open: files{"m": []byte(man.String())}.open, Unresolved: true})
	var n int
	err := l.List(ctx, func(transfer.Object) error {
		if n++; n == 100 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("listing after cancel: %v, want context.Canceled", err)
	}
	if n >= 10_000 || n > 100+1024 {
		t.Fatalf("%d entries listed after cancelling at the 100th, want at most 1,024 more", n)
	}
}
