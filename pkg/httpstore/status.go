package httpstore

import (
	"fmt"
	"net/http"
	"net/http/httptrace"
	"time"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// StatusError is a response whose status is not the file's bytes. It
// tells the engine whether to try again: a server error or 429 may pass
// (429 and 503 slow the whole transfer), a 4xx will not.
type StatusError struct {
	Code   int
	Status string // as the server sent it: "403 Forbidden"
}

// Error implements error.
func (e *StatusError) Error() string {
	msg := e.Status
	switch e.Code {
	case http.StatusForbidden, http.StatusUnauthorized:
		msg += " (a presigned URL may have expired, or it needs credentials)"
	case http.StatusRequestedRangeNotSatisfiable:
		msg += " (the file is shorter than it was)"
	}
	return msg
}

// Retriable implements the engine's retriable behaviour.
func (e *StatusError) Retriable() bool {
	return e.Code >= 500 || e.Code == http.StatusTooManyRequests || e.Code == http.StatusRequestTimeout
}

// Throttle implements the engine's throttle behaviour.
func (e *StatusError) Throttle() bool {
	return e.Code == http.StatusTooManyRequests || e.Code == http.StatusServiceUnavailable
}

// statusErr returns the error of a response that is not 200 or 206, as
// the engine reads it: a 404 or 410 is transfer.ErrNotFound, a 412 (the
// pinned version is gone) or a 416 transfer.ErrModified.
func statusErr(resp *http.Response) error {
	code := resp.StatusCode
	if code == http.StatusOK || code == http.StatusPartialContent {
		return nil
	}
	se := &StatusError{Code: code, Status: resp.Status}
	switch code {
	case http.StatusNotFound, http.StatusGone:
		return transfer.Permanent(fmt.Errorf("%w: %w", se, transfer.ErrNotFound))
	case http.StatusPreconditionFailed, http.StatusRequestedRangeNotSatisfiable:
		return transfer.Permanent(fmt.Errorf("%w: the file changed since it was probed: %w", se, transfer.ErrModified))
	}
	return se
}

// timeConnect returns req with a trace that sets *d to how long it
// waited for a new connection of its own (0 when it reused one).
func timeConnect(req *http.Request, d *time.Duration) *http.Request {
	var asked time.Time
	trace := &httptrace.ClientTrace{
		GetConn: func(string) { asked = time.Now() },
		GotConn: func(info httptrace.GotConnInfo) {
			if !info.Reused && !asked.IsZero() {
				*d = time.Since(asked)
			}
		},
	}
	return req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
}
