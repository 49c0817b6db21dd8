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

// Mixed is a lister for a bounded dataset read as a steady mix: it lists
// Lister once into memory, then emits passes of it until its context ends
// or Stop closes, each pass every object once, its classes (Class: an
// index from 0 below Classes, -1 for none, kept with class 0) interleaved
// in proportion to their bytes, so that every stretch of a run carries
// each class in its share, not one class after another in key order.
// Pass names each pass's objects, as Repeat's.
type Mixed struct {
	transfer.Lister
	Class   func(transfer.Object) int
	Classes int
	Stop    <-chan struct{}
	Pass    func(pass int, o transfer.Object) transfer.Object
}

// List implements transfer.Lister.
func (m Mixed) List(ctx context.Context, emit func(transfer.Object) error) error {
	byClass := make([][]transfer.Object, max(m.Classes, 1))
	err := m.Lister.List(ctx, func(o transfer.Object) error {
		c := m.Class(o)
		if c < 0 || c >= len(byClass) {
			c = 0
		}
		byClass[c] = append(byClass[c], o)
		return nil
	})
	if err != nil {
		return err
	}
	order := interleave(byClass)
	if len(order) == 0 {
		return nil
	}
	r := Repeat{Stop: m.Stop}
	for pass := 0; ; pass++ {
		for _, o := range order {
			if r.stopped() {
				return nil
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			if m.Pass != nil {
				o = m.Pass(pass, o)
			}
			if err := emit(o); err != nil {
				return err
			}
		}
	}
}

// interleave orders every object of the classes so that each class's
// share of the bytes emitted so far stays as close as it can to its
// share of the whole: the next object is always of the class furthest
// behind its share (ties to the lower index).
func interleave(byClass [][]transfer.Object) []transfer.Object {
	total := make([]int64, len(byClass))
	n := 0
	for c, os := range byClass {
		for _, o := range os {
			total[c] += max(o.Size, 1)
		}
		n += len(os)
	}
	out := make([]transfer.Object, 0, n)
	next := make([]int, len(byClass))
	done := make([]int64, len(byClass))
	for len(out) < n {
		best := -1
		for c := range byClass {
			if next[c] >= len(byClass[c]) {
				continue
			}
			// done[c]/total[c] < done[best]/total[best], without division.
			if best < 0 || done[c]*total[best] < done[best]*total[c] {
				best = c
			}
		}
		o := byClass[best][next[best]]
		next[best]++
		done[best] += max(o.Size, 1)
		out = append(out, o)
	}
	return out
}
