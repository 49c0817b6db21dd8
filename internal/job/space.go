package job

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/s3pd/s3pd/pkg/manifest"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// spaceSink is a local destination that can say how much room it has
// and how much of an object it holds already.
type spaceSink interface {
	FreeSpace() (int64, error)
	Landed(transfer.Object) int64
}

// spaceLookahead is how many listed objects the check sees before the
// first byte is asked for: a listing page, so a listing of up to a
// page is checked whole before anything lands. spaceWait bounds how
// long a listing that trickles is held for them.
const (
	spaceLookahead = 1000
	spaceWait      = time.Second
	// spaceCountOn bounds the objects counted on, once they do not
	// fit, for the whole figure: a listing of millions stops there.
	spaceCountOn = 100_000
)

// SpaceError is a destination without room for what is still to land:
// Need bytes still to write to Dest, whose file system has Free. Nothing
// more is written once it is found; the command line renders it.
type SpaceError struct {
	Dest       string
	Need, Free int64
	// AtLeast: Need is what the listing had given when the run stopped
	// (bytes were landing, or the listing was long), not the whole.
	AtLeast bool
}

func (e *SpaceError) Error() string {
	return fmt.Sprintf("not enough space in %s: %d bytes still to write, %d free on its file system", e.Dest, e.Need, e.Free)
}

// spaceLister decorates the lister with the free-space check: what
// the listing selects, less what the destination holds already, is
// compared with the free space as it streams. The first spaceLookahead
// objects (the whole of a shorter listing), or those listed within
// spaceWait, are checked before any is handed on, so none of their
// bytes is fetched when they do not fit;
// later ones stop the run (stop) as soon as the total passes the free
// space. It applies the rules' filter itself, so that it counts only
// what the run would fetch.
type spaceLister struct {
	transfer.Lister
	sink   spaceSink
	filter func(transfer.Object) bool
	dest   string
	free   int64
	stop   context.CancelCauseFunc
}

// List implements transfer.Lister.
func (l *spaceLister) List(ctx context.Context, emit func(transfer.Object) error) error {
	var (
		// mu serialises emit between the listing and the timer that
		// ends the holding of a listing that trickles (a manifest on a
		// pipe): its first objects do not wait for a thousand more.
		mu       sync.Mutex
		need     int64
		held     []transfer.Object
		holding  = true
		flushErr error
		// over: the held objects passed the free space before any was
		// handed on; the rest is counted, not emitted, so the refusal
		// names the whole figure (up to spaceCountOn more objects)
		over    bool
		counted int
	)
	flush := func() error {
		holding = false
		for _, o := range held {
			if err := emit(o); err != nil {
				return err
			}
		}
		held = nil
		return nil
	}
	timer := time.AfterFunc(spaceWait, func() {
		mu.Lock()
		defer mu.Unlock()
		if holding {
			flushErr = flush()
		}
	})
	defer timer.Stop()
	err := l.Lister.List(ctx, func(o transfer.Object) error {
		if l.filter != nil && !l.filter(o) {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		if flushErr != nil {
			return flushErr
		}
		need += max(o.Size-l.sink.Landed(o), 0)
		if over {
			if counted++; counted >= spaceCountOn {
				return &SpaceError{Dest: l.dest, Need: need, Free: l.free, AtLeast: true}
			}
			return nil
		}
		if need > l.free {
			if !holding {
				err := &SpaceError{Dest: l.dest, Need: need, Free: l.free, AtLeast: true}
				l.stop(err) // bytes are landing: stop them
				return err
			}
			over, held = true, nil
			return nil
		}
		if !holding {
			return emit(o)
		}
		if held = append(held, o); len(held) >= spaceLookahead {
			return flush()
		}
		return nil
	})
	timer.Stop()
	mu.Lock()
	defer mu.Unlock()
	var se *SpaceError
	if errors.As(err, &se) {
		return err
	}
	if over {
		return &SpaceError{Dest: l.dest, Need: need, Free: l.free, AtLeast: err != nil}
	}
	if flushErr != nil {
		return flushErr
	}
	var bad *manifest.LineError
	if errors.As(err, &bad) {
		// A bad manifest line is a usage error: nothing may start, and
		// the objects held before it would otherwise race its report.
		return err
	}
	if ferr := flush(); ferr != nil {
		return ferr
	}
	return err
}

// spaceRefresher keeps a Refresher's refresh through the decoration.
type spaceRefresher struct {
	*spaceLister
	transfer.Refresher
}

// withSpaceCheck returns the lister and filter the engine runs with
// when sk's free space is checked (nil sk: unchanged), and the context
// whose cause says the check stopped the run. refresh keeps the
// lister's Refresher.
func withSpaceCheck(ctx context.Context, sk spaceSink, dest string, lister transfer.Lister, refresh bool, filter func(transfer.Object) bool) (context.Context, context.CancelCauseFunc, transfer.Lister, func(transfer.Object) bool, error) {
	ctx, stop := context.WithCancelCause(ctx)
	if sk == nil {
		return ctx, stop, nil, filter, nil
	}
	free, err := sk.FreeSpace()
	if err != nil {
		return ctx, stop, nil, filter, fmt.Errorf("free space of %s: %w (--no-space-check skips the check)", dest, err)
	}
	sl := &spaceLister{Lister: lister, sink: sk, filter: filter, dest: dest, free: free, stop: stop}
	if r, ok := lister.(transfer.Refresher); ok && refresh {
		return ctx, stop, spaceRefresher{sl, r}, nil, nil
	}
	return ctx, stop, sl, nil, nil
}

// spaceFailure is the check's error when it stopped the run, else nil.
func spaceFailure(ctx context.Context, err error) *SpaceError {
	var se *SpaceError
	if errors.As(context.Cause(ctx), &se) || errors.As(err, &se) {
		return se
	}
	return nil
}
