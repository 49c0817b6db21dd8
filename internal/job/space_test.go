package job

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// sliceLister lists objects, waiting gap between them.
type sliceLister struct {
	objs []transfer.Object
	gap  time.Duration
}

func (l sliceLister) List(ctx context.Context, emit func(transfer.Object) error) error {
	for _, o := range l.objs {
		time.Sleep(l.gap) // the listing's pace injected, not a wait
		if err := emit(o); err != nil {
			return err
		}
	}
	return nil
}

// fixedSpace is a destination with free bytes free, holding landed of
// every object.
type fixedSpace struct{ free, landed int64 }

func (s fixedSpace) FreeSpace() (int64, error)    { return s.free, nil }
func (s fixedSpace) Landed(transfer.Object) int64 { return s.landed }

func objects(n int, size int64) []transfer.Object {
	out := make([]transfer.Object, n)
	for i := range out {
		out[i] = transfer.Object{Key: "k", Size: size}
	}
	return out
}

// TestSpaceListerHoldsThenChecks: objects reach the engine only once
// the lookahead is checked (a short listing: its whole), or a trickling
// listing's first second passed; a listing that does not fit hands
// nothing on when the lookahead catches it, and stops the run when a
// later object does. A listing caught while nothing was handed on is
// counted to its end, so the refusal names the whole figure; one caught
// while bytes land names what it had ("at least").
func TestSpaceListerHoldsThenChecks(t *testing.T) {
	tests := []struct {
		name      string
		objs      []transfer.Object
		gap       time.Duration
		space     fixedSpace
		wantErr   bool
		wantEmits int64 // emitted in all
		first     int   // objects listed when the first is handed on
		stopped   bool  // the run was stopped with the error
		need      int64 // the error's figure
		atLeast   bool  // the figure is what was listed when it stopped
	}{
		{"a short listing is checked whole", objects(10, 100), 0, fixedSpace{free: 1000}, false, 10, 10, false, 0, false},
		{"a short listing that does not fit", objects(11, 100), 0, fixedSpace{free: 1000}, true, 0, 0, false, 1100, false},
		{"the whole figure of what does not fit", objects(30, 100), 0, fixedSpace{free: 1000}, true, 0, 0, false, 3000, false},
		{"what has landed is not counted", objects(20, 100), 0, fixedSpace{free: 1000, landed: 60}, false, 20, 20, false, 0, false},
		{"a long listing, past the lookahead", objects(spaceLookahead+10, 1), 0, fixedSpace{free: spaceLookahead + 5}, true, spaceLookahead + 5, spaceLookahead, true, spaceLookahead + 6, true},
		// The second object comes 1.5 s after the first, which went on
		// at once: the hold had ended a second into the listing.
		{"a trickling listing is not held past a second", objects(2, 1), 1500 * time.Millisecond, fixedSpace{free: 10}, false, 2, 1, false, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var listed, emits atomic.Int64
			first := int64(-1)
			inner := sliceLister{objs: tt.objs, gap: tt.gap}
			counting := listerFunc(func(ctx context.Context, emit func(transfer.Object) error) error {
				return inner.List(ctx, func(o transfer.Object) error { listed.Add(1); return emit(o) })
			})
			ctx, stop, l, filter, err := withSpaceCheck(context.Background(), tt.space, "/d", counting, false, nil)
			defer stop(nil)
			if err != nil || filter != nil {
				t.Fatalf("withSpaceCheck: %v, filter %v", err, filter != nil)
			}
			err = l.List(ctx, func(transfer.Object) error {
				if emits.Add(1) == 1 {
					first = listed.Load()
				}
				return nil
			})
			var se *SpaceError
			if got := errors.As(err, &se); got != tt.wantErr {
				t.Fatalf("error %v, want a space error: %v", err, tt.wantErr)
			}
			if se != nil && (se.Need != tt.need || se.AtLeast != tt.atLeast) {
				t.Errorf("space error needs %d (at least: %v), want %d (%v)", se.Need, se.AtLeast, tt.need, tt.atLeast)
			}
			if emits.Load() != tt.wantEmits {
				t.Errorf("%d objects handed on, want %d", emits.Load(), tt.wantEmits)
			}
			if tt.wantEmits > 0 && first != int64(tt.first) {
				t.Errorf("the first object was handed on when %d were listed, want %d", first, tt.first)
			}
			if stopped := spaceFailure(ctx, nil) != nil; stopped != tt.stopped {
				t.Errorf("run stopped: %v, want %v", stopped, tt.stopped)
			}
		})
	}
}

type listerFunc func(ctx context.Context, emit func(transfer.Object) error) error

func (f listerFunc) List(ctx context.Context, emit func(transfer.Object) error) error {
	return f(ctx, emit)
}
