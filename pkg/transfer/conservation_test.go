package transfer

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// checkSink skips the objects named in skip.
type checkSink struct {
	*memSink
	skip map[string]bool
}

func (s checkSink) Check(o Object) error {
	if s.skip[o.Name] {
		return &SkipError{Reason: "unchanged"}
	}
	return nil
}

// Every listed object ends in one verdict, and the summary counts them:
// transferred, skipped, excluded by the filter, failed (a listed field
// that could not be read).
func TestRunAccountsForEveryListedObject(t *testing.T) {
	src := newMemSource(map[string]int64{"a": 10, "b": 20, "c": 30, "d": 40, "e": 50})
	for i := range src.objs {
		if src.objs[i].Key == "d" {
			src.objs[i].Err = Permanent(errors.New("unreadable size"))
		}
	}
	sink := checkSink{newMemSink(), map[string]bool{"b": true}}
	e, err := New([]Lane{{Name: "0", Source: src}}, sink, Options{Filter: func(o Object) bool { return o.Name != "e" }})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := [5]int64{sum.Listed, sum.Objects, sum.Skipped, sum.Excluded, sum.Failed}
	if want := [5]int64{5, 2, 1, 1, 1}; got != want {
		t.Fatalf("listed, transferred, skipped, excluded, failed = %v, want %v", got, want)
	}
	if err := sum.Account("test"); err != nil {
		t.Fatal(err)
	}
}

func TestAccountNamesTheDifference(t *testing.T) {
	for _, tc := range []struct {
		sum  Summary
		want string // "" for none
	}{
		{Summary{Listed: 4, Objects: 1, Skipped: 1, Excluded: 1, Failed: 1}, ""},
		{Summary{}, ""},
		{Summary{Listed: 2, Objects: 1}, "internal error in the job: 1 listed object without a verdict (listed 2, transferred 1 + skipped 0 + excluded 0 + failed 0 = 1)"},
		{Summary{Listed: 1, Objects: 1, Failed: 2}, "internal error in the job: 2 verdicts more than listed"},
	} {
		err := tc.sum.Account("the job")
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v, want nil", tc.sum, err)
		case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want) || !errors.Is(err, ErrUnaccounted)):
			t.Errorf("%+v: %v, want %q (ErrUnaccounted)", tc.sum, err, tc.want)
		}
	}
}

// Count counts what its lister gives and keeps it a Refresher only when
// the inner lister is one.
func TestCount(t *testing.T) {
	src := newMemSource(map[string]int64{"a": 1, "b": 2})
	l, n := Count(src)
	if _, ok := l.(Refresher); ok {
		t.Error("a counted memSource is a Refresher; it is not one")
	}
	if err := l.List(context.Background(), func(Object) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if n() != 2 {
		t.Errorf("counted %d, want 2", n())
	}
	if rl, _ := Count(refreshing{src}); !isRefresher(rl) {
		t.Error("a counted Refresher is not a Refresher")
	}
}

type refreshing struct{ *memSource }

func (refreshing) Refresh(context.Context, *Object) error { return nil }

func isRefresher(l Lister) bool {
	_, ok := l.(Refresher)
	return ok
}
