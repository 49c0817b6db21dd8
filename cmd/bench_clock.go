package cmd

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/s3pd/s3pd/pkg/report"
	"github.com/s3pd/s3pd/pkg/s3emu"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// autoDuration is a flag that takes "auto" or a duration (--duration,
// --warmup).
type autoDuration struct {
	d    time.Duration
	auto bool
}

func (a *autoDuration) String() string {
	if a.auto {
		return "auto"
	}
	return a.d.String()
}

func (a *autoDuration) Set(s string) error {
	if s == "auto" {
		*a = autoDuration{auto: true}
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return fmt.Errorf("want auto or a duration (30s, 2m)")
	}
	*a = autoDuration{d: d}
	return nil
}

func (a *autoDuration) Type() string { return "duration" }

// benchAutoLimit is how long bench runs at most with --duration auto
// against the embedded emulator's default dataset: long enough for a
// steady figure on any core count, ending sooner once it is steady.
const benchAutoLimit = 20 * time.Second

// Why the clock ended a bench's transfer (the context's cause). Each is
// a cancellation (errors.Is context.Canceled), so the objects it cuts
// count as interrupted, not failed.
var (
	errBenchTime   error = clockEnd("bench: --duration is over")
	errBenchSteady error = clockEnd("bench: the rate is steady")
)

// clockEnd is the cause of a round the clock ended.
type clockEnd string

func (e clockEnd) Error() string { return string(e) }

// Is makes a clockEnd a cancellation.
func (clockEnd) Is(target error) bool { return target == context.Canceled }

// benchClock ends one round of a bench at its duration, or once its
// rate is steady (report.Steadied), and reads the listing again until
// then.
type benchClock struct {
	// limit is the round's duration (0: the listing's end); early ends
	// it once steady; warmup is --warmup (<0: auto).
	limit  time.Duration
	early  bool
	warmup time.Duration
	// pass names each pass's objects (nil: the same keys again); mix,
	// when set, reads the listing (the emulator's dataset, bounded) as a
	// steady mix of its classes (job.Mixed) instead of in key order.
	pass func(int, transfer.Object) transfer.Object
	mix  bool

	cancel  context.CancelCauseFunc
	mu      sync.Mutex
	timer   *time.Timer
	samples []transfer.Sample // under the sampler's goroutine
}

// context is the transfer's context, which the clock ends.
func (c *benchClock) context(ctx context.Context) context.Context {
	ctx, c.cancel = context.WithCancelCause(ctx)
	return ctx
}

// start starts the clock as the engine starts.
func (c *benchClock) start() {
	if c.limit <= 0 {
		return
	}
	c.mu.Lock()
	c.timer = time.AfterFunc(c.limit, func() { c.cancel(errBenchTime) })
	c.mu.Unlock()
}

// stop releases the clock once the transfer returned.
func (c *benchClock) stop() {
	c.mu.Lock()
	if c.timer != nil {
		c.timer.Stop()
	}
	c.mu.Unlock()
	c.cancel(nil)
}

// sample sees each interval; with early, it ends the round once the
// steady rate stopped moving.
func (c *benchClock) sample(s transfer.Sample) {
	if !c.early {
		return
	}
	c.samples = append(c.samples, s)
	warmup, settled := c.warmup, true
	if warmup < 0 {
		warmup, settled = report.WarmupOf(c.samples)
	}
	if settled && report.Steadied(report.SteadyRates(c.samples, warmup)) {
		c.cancel(errBenchSteady)
	}
}

// ended says the clock, not the user or a failure, ended ctx.
func (c *benchClock) ended(ctx context.Context) bool {
	cause := context.Cause(ctx)
	return errors.Is(cause, errBenchTime) || errors.Is(cause, errBenchSteady)
}

// emulatorPass names an object of the emulator's dataset as pass n
// reads it: a fresh key with the same bytes (s3emu.PassKey).
func emulatorPass(n int, o transfer.Object) transfer.Object {
	o.Key, o.Name = s3emu.PassKey(o.Key, n), s3emu.PassKey(o.Name, n)
	return o
}
