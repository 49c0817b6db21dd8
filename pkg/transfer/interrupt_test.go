package transfer

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// deafLister lists its objects, then blocks until release is closed,
// ignoring ctx: a manifest read from a stdin that stays open.
type deafLister struct {
	objs    []Object
	release chan struct{}
}

func (l deafLister) List(_ context.Context, emit func(Object) error) error {
	for _, o := range l.objs {
		if err := emit(o); err != nil {
			return err
		}
	}
	<-l.release
	return nil
}

func TestInterruptDoesNotWaitForABlockedListing(t *testing.T) {
	// A bubble: the test waits for the run to settle (synctest.Wait), not
	// for a guess of how long it takes.
	synctest.Test(t, func(t *testing.T) {
		src := newMemSource(map[string]int64{"a": 1000, "b": 2000})
		sink := newMemSink()
		release := make(chan struct{})
		defer close(release)
		e, err := New([]Lane{{Name: "a", Source: src}}, sink,
			Options{Lister: deafLister{objs: src.objs, release: release}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := e.Run(ctx)
			done <- err
		}()
		// Both objects listed are transferred while the listing stays open.
		synctest.Wait()
		if n := e.objects.Load(); n != 2 {
			t.Fatalf("%d of 2 objects transferred with the listing open", n)
		}
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("run: %v, want context.Canceled", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the run waited for a listing blocked on a read that ignores ctx")
		}
	})
}
