package job

import (
	"context"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// Repeat is a lister that lists again and again, until its context ends
// or Stop closes: a benchmark that runs for a duration, whatever the size
// of what it reads. Pass, when set, names each pass's objects (pass 0 is
// the listing as it is), so that a server can serve each pass as fresh
// objects; nil reads the same objects again.
type Repeat struct {
	transfer.Lister
	Stop <-chan struct{}
	Pass func(pass int, o transfer.Object) transfer.Object
}

// List implements transfer.Lister. A pass that lists nothing ends it;
// so does the end of ctx, with its error.
func (r Repeat) List(ctx context.Context, emit func(transfer.Object) error) error {
	for pass := 0; ; pass++ {
		n := 0
		err := r.Lister.List(ctx, func(o transfer.Object) error {
			if r.stopped() {
				return errStop
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			n++
			if r.Pass != nil {
				o = r.Pass(pass, o)
			}
			return emit(o)
		})
		switch {
		case err == errStop || r.stopped():
			return nil
		case err == nil && ctx.Err() != nil:
			return ctx.Err()
		case err != nil:
			return err
		case n == 0:
			return nil
		}
	}
}

func (r Repeat) stopped() bool {
	select {
	case <-r.Stop:
		return true
	default:
		return false
	}
}

// errStop ends one pass's listing when Stop closes.
var errStop = stopError{}

type stopError struct{}

func (stopError) Error() string { return "listing stopped" }
