package transfer

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
)

// Every object a lister gives the engine ends in exactly one verdict:
// transferred, skipped (with its reason: unchanged, a dry run, a
// directory marker, excluded by the filter) or failed (named, with its
// reason). The engine counts the objects listed and the verdicts, and a
// run that was not interrupted checks
//
//	listed = transferred + skipped + excluded + failed
//
// A run where they disagree lost an object somewhere between the listing
// and its end: Run returns an *UnaccountedError, never success. The
// layers above the engine (a job that decorates its listing) check the
// same of what they hand it with Accounting.

// ErrUnaccounted is what an *UnaccountedError is (errors.Is).
var ErrUnaccounted = errors.New("listed objects unaccounted for")

// UnaccountedError says objects were listed that ended in no verdict, or
// verdicts came for objects never listed: an internal error, whatever the
// server did.
type UnaccountedError struct {
	// Where names the step whose counts disagree ("the engine", "the
	// job's listing").
	Where string
	// Listed counts the objects listed; the rest, their verdicts.
	Listed, Transferred, Skipped, Excluded, Failed int64
}

func (e *UnaccountedError) Error() string {
	got := e.Transferred + e.Skipped + e.Excluded + e.Failed
	diff := fmt.Sprintf("%d listed %s without a verdict", e.Listed-got, objectsWord(e.Listed-got))
	if got > e.Listed {
		diff = fmt.Sprintf("%d %s more than listed", got-e.Listed, verdictsWord(got-e.Listed))
	}
	return fmt.Sprintf("internal error in %s: %s (listed %d, transferred %d + skipped %d + excluded %d + failed %d = %d)",
		e.Where, diff, e.Listed, e.Transferred, e.Skipped, e.Excluded, e.Failed, got)
}

// Is makes errors.Is(err, ErrUnaccounted) true.
func (e *UnaccountedError) Is(target error) bool { return target == ErrUnaccounted }

func objectsWord(n int64) string {
	if n == 1 {
		return "object"
	}
	return "objects"
}

func verdictsWord(n int64) string {
	if n == 1 {
		return "verdict"
	}
	return "verdicts"
}

// Account checks the summary's counts of a run that was not
// interrupted: nil when every listed object has one verdict, else an
// *UnaccountedError that names where (the step that checks).
func (s Summary) Account(where string) error {
	if s.Listed == s.Objects+s.Skipped+s.Excluded+s.Failed {
		return nil
	}
	return &UnaccountedError{Where: where, Listed: s.Listed, Transferred: s.Objects, Skipped: s.Skipped, Excluded: s.Excluded, Failed: s.Failed}
}

// Count returns a lister that counts what inner lists, and the count so
// far: the layer that decorates a listing (a shard's split, a space
// check, a sort) counts what its innermost lister yields and compares it
// with what the engine listed once the run ends. The lister is a
// Refresher when inner is.
func Count(inner Lister) (Lister, func() int64) {
	c := &counted{inner: inner}
	if r, ok := inner.(Refresher); ok {
		return countedRefresher{c, r}, c.n.Load
	}
	return c, c.n.Load
}

type counted struct {
	inner Lister
	n     atomic.Int64
}

func (c *counted) List(ctx context.Context, emit func(Object) error) error {
	return c.inner.List(ctx, func(o Object) error {
		c.n.Add(1)
		return emit(o)
	})
}

type countedRefresher struct {
	*counted
	Refresher
}
