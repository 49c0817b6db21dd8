package transfer

import (
	"context"
	"errors"
	"testing"
)

// staleLister lists one object with an ETag that has gone stale; as a
// Refresher it looks the object up again in src.
type staleLister struct {
	src       *memSource
	refreshes int
}

func (l *staleLister) List(ctx context.Context, emit func(Object) error) error {
	o := l.src.objs[0]
	o.ETag = `"stale"`
	return emit(o)
}

type refreshingLister struct{ *staleLister }

func (l refreshingLister) Refresh(ctx context.Context, o *Object) error {
	l.refreshes++
	for _, s := range l.src.objs {
		if s.Key == o.Key {
			o.Size, o.ETag = s.Size, s.ETag
			return nil
		}
	}
	return errors.New("gone")
}

func TestListerReplacesTheListingAndRefreshesStaleObjects(t *testing.T) {
	for _, tc := range []struct {
		name       string
		refresh    bool
		wantFailed int64
	}{
		{"plain lister: a stale ETag fails the object", false, 1},
		{"refresher: the object is looked up again and arrives", true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := newMemSource(map[string]int64{"a": 3000})
			sink := newMemSink()
			stale := &staleLister{src: src}
			var l Lister = stale
			if tc.refresh {
				l = refreshingLister{stale}
			}
			e, err := New([]Lane{{Name: "x", Source: src}}, sink, Options{PartSize: 1000, Lister: l})
			if err != nil {
				t.Fatal(err)
			}
			sum, err := e.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if sum.Failed != tc.wantFailed {
				t.Fatalf("failed %d, want %d", sum.Failed, tc.wantFailed)
			}
			if tc.refresh && stale.refreshes != 1 {
				t.Fatalf("refreshed %d times, want 1", stale.refreshes)
			}
			if got := string(sink.committed["a"]); tc.refresh && got != string(src.data["a"]) {
				t.Fatalf("object a: got %d bytes, want its %d", len(got), len(src.data["a"]))
			}
		})
	}
}
