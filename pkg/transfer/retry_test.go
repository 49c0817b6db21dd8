package transfer

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

// behaviourError is an adapter's error as the engine sees it: only its
// behaviours, no protocol's codes.
type behaviourError struct {
	msg             string
	retry, throttle bool
}

func (e *behaviourError) Error() string   { return e.msg }
func (e *behaviourError) Retriable() bool { return e.retry }
func (e *behaviourError) Throttle() bool  { return e.throttle }

// errSlowDown and errDenied are a server's "slow down" and "denied".
var (
	errSlowDown = &behaviourError{msg: "slow down", retry: true, throttle: true}
	errDenied   = &behaviourError{msg: "denied"}
)

func TestBackoffRetry(t *testing.T) {
	retriable := &behaviourError{msg: "reset", retry: true}
	final := errDenied
	b := Backoff{Base: time.Millisecond, Cap: time.Millisecond, MaxAttempts: 4}
	tests := []struct {
		name      string
		errs      []error // what each call returns; nil after the list
		wantCalls int
		wantErr   error
	}{
		{"first call succeeds", nil, 1, nil},
		{"succeeds after two retriable errors", []error{retriable, retriable}, 3, nil},
		{"final error is not retried", []error{final, retriable}, 1, final},
		{"gives up after MaxAttempts", []error{retriable, retriable, retriable, retriable, retriable}, 4, retriable},
		{"SlowDown has a budget three times larger", slices.Repeat([]error{errSlowDown}, 13), 12, errSlowDown},
		{"SlowDowns do not use up the attempts", append(slices.Repeat([]error{errSlowDown}, 11), retriable, retriable, retriable), 15, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			err := b.Retry(context.Background(), func() error {
				calls++
				if calls <= len(tt.errs) {
					return tt.errs[calls-1]
				}
				return nil
			})
			if calls != tt.wantCalls || !errors.Is(err, tt.wantErr) {
				t.Fatalf("%d calls, error %v; want %d calls, error %v", calls, err, tt.wantCalls, tt.wantErr)
			}
		})
	}
	t.Run("a cancelled context stops the retries", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		calls := 0
		err := Backoff{Base: time.Hour, Cap: time.Hour, MaxAttempts: 10}.Retry(ctx, func() error {
			calls++
			cancel()
			return retriable
		})
		if calls != 1 || !errors.Is(err, retriable) {
			t.Fatalf("%d calls, error %v; want 1 call returning the last error", calls, err)
		}
	})
}

// TestBudgetsTable checks the table of retry budgets: one row per kind,
// in Kind's order, each with attempts, waits that grow to a cap and a
// reason; and that a range is retried by it unless told otherwise.
func TestBudgetsTable(t *testing.T) {
	rows := Budgets()
	if len(rows) != int(kinds) {
		t.Fatalf("%d rows, want one per kind (%d)", len(rows), kinds)
	}
	for i, b := range rows {
		if b.Kind != Kind(i) || b.Name == "" || b.Why == "" || b.MaxAttempts < 1 || b.Base <= 0 || b.Cap < b.Base {
			t.Errorf("row %d: %+v; want kind %d, a name, a reason, an attempt or more and 0 < Base <= Cap", i, b, i)
		}
		if got := BudgetFor(b.Kind); got != b.Backoff {
			t.Errorf("BudgetFor(%s) = %+v, want the table's %+v", b.Kind, got, b.Backoff)
		}
	}
	if got := (Options{}).WithDefaults().Backoff; got != BudgetFor(RangeRead) {
		t.Errorf("a range's default backoff is %+v, want the range read budget %+v", got, BudgetFor(RangeRead))
	}
}
