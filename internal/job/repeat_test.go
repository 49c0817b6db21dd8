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
