package s3store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// stalledError reports a request whose server went silent: no response
// headers, or no listing bytes, for the stall timeout. It is worth
// another attempt on a new connection.
type stalledError struct {
	what string
	d    time.Duration
}

func (e *stalledError) Error() string   { return fmt.Sprintf("stalled: no %s for %s", e.what, e.d) }
func (e *stalledError) Retriable() bool { return true }

// watch bounds how long one request may stay silent. Without it a server
// that accepts the connection and never answers would hold the request
// until the transport's two-minute header timeout, and a listing page
// whose body stops would hold the run forever.
type watch struct {
	d      time.Duration
	t      *time.Timer
	cancel context.CancelCauseFunc
	ctx    context.Context
}

// startWatch returns the context a request runs under and its watch; d
// <= 0 watches nothing (w is nil, and its methods do nothing).
func startWatch(ctx context.Context, d time.Duration) (context.Context, *watch) {
	if d <= 0 {
		return ctx, nil
	}
	wctx, cancel := context.WithCancelCause(ctx)
	w := &watch{d: d, cancel: cancel, ctx: wctx}
	w.t = time.AfterFunc(d, func() { cancel(&stalledError{what: "response", d: d}) })
	return wctx, w
}

// failed ends the watch of a request that failed and returns its error,
// the stall if the watch cut it short.
func (w *watch) failed(err error) error {
	if w == nil {
		return err
	}
	w.t.Stop()
	err = w.cause(err)
	w.cancel(nil)
	return err
}

// cause replaces err with the stall when the watch fired.
func (w *watch) cause(err error) error {
	var se *stalledError
	if w != nil && err != nil && errors.As(context.Cause(w.ctx), &se) {
		return se
	}
	return err
}

// body hands the response body over: the request's context lives until
// the body is closed. With keep, every read rearms the watch, so a body
// that stops for the timeout fails; without, the watch ends here (the
// engine watches object bodies itself).
func (w *watch) body(rc io.ReadCloser, keep bool) io.ReadCloser {
	if w == nil {
		return rc
	}
	if !keep {
		w.t.Stop()
	}
	return &watchedBody{ReadCloser: rc, w: w, keep: keep}
}

type watchedBody struct {
	io.ReadCloser
	w    *watch
	keep bool
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if b.keep && n > 0 {
		b.w.t.Reset(b.w.d)
	}
	return n, b.w.cause(err)
}

func (b *watchedBody) Close() error {
	b.w.t.Stop()
	err := b.ReadCloser.Close()
	b.w.cancel(nil)
	return err
}
