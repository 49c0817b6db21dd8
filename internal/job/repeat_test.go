package job

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// keyList lists its keys, once per call.
type keyList []string

func (k keyList) List(ctx context.Context, emit func(transfer.Object) error) error {
	for _, key := range k {
		if err := emit(transfer.Object{Key: key, Name: key, Size: 1}); err != nil {
			return err
		}
	}
	return nil
}

// TestRepeatListsUntilStopped: each pass lists the objects again, named
// by Pass; the listing ends when the context ends or Stop closes, and at
// once on an empty listing.
func TestRepeatListsUntilStopped(t *testing.T) {
	stop := make(chan struct{})
	var got []string
	r := Repeat{Lister: keyList{"a", "b"}, Stop: stop, Pass: func(n int, o transfer.Object) transfer.Object {
		o.Key = fmt.Sprintf("%s~%d", o.Key, n)
		return o
	}}
	err := r.List(context.Background(), func(o transfer.Object) error {
		got = append(got, o.Key)
		if len(got) == 5 {
			close(stop)
		}
		return nil
	})
	if want := "[a~0 b~0 a~1 b~1 a~2]"; err != nil || fmt.Sprint(got) != want {
		t.Fatalf("listed %v (error %v), want %s and no error", got, err, want)
	}

	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	err = Repeat{Lister: keyList{"a"}}.List(ctx, func(transfer.Object) error {
		if n++; n == 3 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) || n != 3 {
		t.Errorf("after the context ended: %d objects, error %v; want 3 and the context's error", n, err)
	}

	if err := (Repeat{Lister: keyList{}}).List(context.Background(), func(transfer.Object) error { return nil }); err != nil {
		t.Errorf("empty listing: error %v, want none", err)
	}
	boom := errors.New("boom")
	if err := (Repeat{Lister: keyList{"a"}}).List(context.Background(), func(transfer.Object) error { return boom }); !errors.Is(err, boom) {
		t.Errorf("emit's error: got %v, want %v", err, boom)
	}
}

// sized lists objects of the given sizes, named by class and index.
type sized []transfer.Object

func (s sized) List(ctx context.Context, emit func(transfer.Object) error) error {
	for _, o := range s {
		if err := emit(o); err != nil {
			return err
		}
	}
	return nil
}

// TestMixedInterleavesClassesByBytes: a listing in key order (every
// large object, then every small one) is read as a mix: each stretch
// carries both classes in proportion to their bytes, every pass every
// object once, and later passes renamed.
func TestMixedInterleavesClassesByBytes(t *testing.T) {
	var l sized
	for i := range 2 {
		l = append(l, transfer.Object{Key: fmt.Sprintf("big/%d", i), Size: 400})
	}
	for i := range 8 {
		l = append(l, transfer.Object{Key: fmt.Sprintf("small/%d", i), Size: 100})
	}
	class := func(o transfer.Object) int {
		if o.Size >= 400 {
			return 0
		}
		return 1
	}
	stop := make(chan struct{})
	var got []string
	m := Mixed{Lister: l, Class: class, Classes: 2, Stop: stop, Pass: func(n int, o transfer.Object) transfer.Object {
		o.Key = fmt.Sprintf("%s~%d", o.Key, n)
		return o
	}}
	err := m.List(context.Background(), func(o transfer.Object) error {
		if got = append(got, o.Key); len(got) == 2*len(l) {
			close(stop)
		}
		return nil
	})
	want := "[big/0~0 small/0~0 small/1~0 small/2~0 small/3~0 big/1~0 small/4~0 small/5~0 small/6~0 small/7~0 " +
		"big/0~1 small/0~1 small/1~1 small/2~1 small/3~1 big/1~1 small/4~1 small/5~1 small/6~1 small/7~1]"
	if err != nil || fmt.Sprint(got) != want {
		t.Fatalf("listed %v (error %v),\nwant %s", got, err, want)
	}
	if err := (Mixed{Lister: sized{}, Class: class, Classes: 2}).List(context.Background(), func(transfer.Object) error { return nil }); err != nil {
		t.Errorf("empty listing: %v, want none", err)
	}
}
