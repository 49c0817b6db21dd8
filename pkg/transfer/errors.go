package transfer

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"syscall"
	"time"
)

// ErrModified reports that an object changed while it was transferred.
var ErrModified = errors.New("object modified during download")

// ErrNotFound reports that an object or bucket does not exist.
var ErrNotFound = errors.New("not found")

// The engine knows no protocol's error codes. An adapter marks its errors
// with behaviours, methods that errors.As finds anywhere in an error's
// chain, and the engine reads only those (and its own sentinels above):
//
//	Retriable() bool     may the request succeed if sent again (Retriable)
//	Throttle() bool      did the server ask the whole transfer to slow down
//	SkipReason() string  is the object deliberately not transferred, and why
//
// Permanent marks any error as not retriable; SkipError is a ready skip.

// SkipError tells the engine that an object is deliberately not
// transferred (unchanged, archived, a dry run), with the reason.
type SkipError struct {
	Reason string
	// Intact: the file already at the final name was read and matches
	// the object's checksum (Options.VerifyExisting).
	Intact bool
}

func (s *SkipError) Error() string { return "skipped: " + s.Reason }

// SkipReason implements the skip behaviour.
func (s *SkipError) SkipReason() string { return s.Reason }

// SkipReason returns why err means the object is skipped rather than
// failed (an error in its chain with a non-empty SkipReason), or "".
func SkipReason(err error) string {
	var s interface{ SkipReason() string }
	if err != nil && errors.As(err, &s) {
		return s.SkipReason()
	}
	return ""
}

// ShortBodyError reports a body that ended before the bytes it promised.
type ShortBodyError struct{ Got, Want int64 }

func (e *ShortBodyError) Error() string {
	return fmt.Sprintf("short body: got %d of %d bytes", e.Got, e.Want)
}

// Retriable implements the retriable contract: a broken body is resumed.
func (e *ShortBodyError) Retriable() bool { return true }

// BadResponseError is a response that does not carry what was asked (a
// wrong Content-Range, a length that disagrees): retried, a bounded
// number of times.
type BadResponseError struct{ Msg string }

func (e *BadResponseError) Error() string { return "bad response: " + e.Msg }

// Retriable implements the retriable contract.
func (e *BadResponseError) Retriable() bool { return true }

// permanent marks an error as never retriable.
type permanent struct{ err error }

func (p permanent) Error() string   { return p.err.Error() }
func (p permanent) Unwrap() error   { return p.err }
func (p permanent) Retriable() bool { return false }

// Permanent wraps err so that the engine never retries it.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanent{err}
}

// errStalled reports a range that delivered nothing for too long.
var errStalled = errors.New("stalled: no data received")

// Retriable decides, in one place, whether err is worth another attempt.
func Retriable(err error) bool {
	if err == nil {
		return false
	}
	var r interface{ Retriable() bool }
	if errors.As(err, &r) {
		return r.Retriable()
	}
	switch {
	case errors.Is(err, context.Canceled):
		return false
	case errors.Is(err, errStalled),
		errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, io.EOF),
		errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.EPIPE),
		errors.Is(err, context.DeadlineExceeded):
		return true
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EROFS), errors.Is(err, syscall.EACCES):
		return false
	}
	// A certificate that does not verify will not verify on a new
	// connection either (--ca-bundle or --no-verify-ssl are the cure).
	var cert *tls.CertificateVerificationError
	if errors.As(err, &cert) {
		return false
	}
	var ne net.Error
	return errors.As(err, &ne)
}

// throttled reports whether err asks the whole transfer to slow down.
func throttled(err error) bool {
	var t interface{ Throttle() bool }
	return errors.As(err, &t) && t.Throttle()
}

// Backoff is a capped exponential backoff with full jitter.
// Each kind of request has one in the table of Budgets (BudgetFor).
type Backoff struct {
	Base, Cap   time.Duration
	MaxAttempts int // attempts per request, the first one included
}

// Delay returns how long to wait before attempt (1-based retry count).
func (b Backoff) Delay(retry int) time.Duration {
	d := b.Cap
	if retry < 30 {
		if e := b.Base << uint(retry-1); e > 0 && e < b.Cap {
			d = e
		}
	}
	return time.Duration(rand.Int64N(int64(d) + 1))
}

// spent reports whether a request that made attempt attempts and was
// refused with SlowDown throttles times may not try again: SlowDown has
// a budget of its own, three times larger than MaxAttempts.
func (b Backoff) spent(attempt, throttles int) bool {
	return attempt >= b.MaxAttempts || throttles >= 3*b.MaxAttempts
}

// Retry calls do until it succeeds, fails with an error Retriable calls
// final, MaxAttempts calls were made, or ctx ends, waiting Delay between
// calls. It returns do's last error. A SlowDown counts against its own
// budget (spent), as in a range's own retry loop: a listing page asked
// for while the ranges keep a server at its limit is refused again and
// again, and a run must not fail for it. Adapters use it for requests
// outside that loop (listing pages, checksum HEADs).
func (b Backoff) Retry(ctx context.Context, do func() error) error {
	throttles := 0
	for attempt := 1; ; attempt++ {
		err := do()
		if err == nil || !Retriable(err) || ctx.Err() != nil {
			return err
		}
		if throttled(err) {
			throttles++
			attempt--
		}
		if b.spent(attempt, throttles) {
			return err
		}
		if sleep(ctx, b.Delay(max(attempt, throttles))) != nil {
			return err
		}
	}
}

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
