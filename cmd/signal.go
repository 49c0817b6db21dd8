package cmd

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"
)

// ExitTerminated is the exit code of a run stopped by SIGTERM (128+15),
// what Kubernetes and Slurm logs show for it.
const ExitTerminated = 143

// signalCause is why the signal context ended: the signal it caught.
// It is a context.Canceled, as the end of any context is, so code that
// checks for one (errors.Is) reads it the same.
type signalCause struct{ sig os.Signal }

func (c *signalCause) Error() string { return "interrupted (" + c.sig.String() + ")" }
func (c *signalCause) Unwrap() error { return context.Canceled }

// SignalContext is a context cancelled by the first SIGINT or SIGTERM,
// with the signal as its cause, which the exit code tells apart (130,
// 143). stop stops catching them.
func SignalContext() (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			cancel(&signalCause{sig: s})
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel(nil)
	}
}

// interruptedCode is the exit code of a run that ctx's end interrupted:
// 143 for SIGTERM, else 130.
func interruptedCode(ctx context.Context) int {
	var sc *signalCause
	if errors.As(context.Cause(ctx), &sc) && sc.sig == syscall.SIGTERM {
		return ExitTerminated
	}
	return ExitInterrupted
}
