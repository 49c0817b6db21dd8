package cmd

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/s3pd/s3pd/pkg/s3emu"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// TestBenchClockFollowsDuration: --duration D runs for D, reading the
// data again (the emulator's passes under fresh names); auto runs up to
// 20 s, ending once steady, against the emulator's default dataset only;
// a URL or a --dataset given is read once, as is --duration 0.
func TestBenchClockFollowsDuration(t *testing.T) {
	ds, _ := s3emu.ParseDataset(defaultBenchDataset)
	for _, tt := range []struct {
		name     string
		args     []string
		emulator bool
		limit    time.Duration // 0: no clock, one pass
		early    bool
		fresh    bool // passes read fresh names
		warmup   time.Duration
	}{
		{"default dataset: auto", nil, true, benchAutoLimit, true, true, -1},
		{"a dataset given: once", []string{"--dataset", "d:4:1MiB"}, true, 0, false, false, 0},
		{"a URL: once", nil, false, 0, false, false, 0},
		{"--duration on a URL: the same keys again", []string{"--duration", "5s"}, false, 5 * time.Second, false, false, -1},
		{"--duration with a dataset", []string{"--duration", "2s", "--dataset", "d:4:1MiB", "--warmup", "1s"}, true, 2 * time.Second, false, true, time.Second},
		{"--duration 0: once", []string{"--duration", "0"}, true, 0, false, false, 0},
		{"--duration auto, said", []string{"--duration", "auto"}, true, benchAutoLimit, true, true, -1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			opts := &benchOptions{duration: autoDuration{auto: true}, warmup: autoDuration{auto: true}}
			fs := pflag.NewFlagSet("bench", pflag.ContinueOnError)
			fs.Var(&opts.duration, "duration", "")
			fs.Var(&opts.warmup, "warmup", "")
			fs.StringVar(&opts.dataset, "dataset", defaultBenchDataset, "")
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			opts.flags = fs
			var on *s3emu.Dataset
			if tt.emulator {
				on = &ds
			}
			c := opts.clock(on)
			if tt.limit == 0 {
				if c != nil {
					t.Fatalf("clock %+v, want none (one pass)", c)
				}
				return
			}
			if c == nil || c.limit != tt.limit || c.early != tt.early || (c.pass != nil) != tt.fresh || c.warmup != tt.warmup {
				t.Fatalf("clock %+v, want limit %s, early %v, fresh names %v, warm-up %s", c, tt.limit, tt.early, tt.fresh, tt.warmup)
			}
		})
	}
	var d autoDuration
	for _, bad := range []string{"-1s", "soon", "10"} {
		if err := d.Set(bad); err == nil {
			t.Errorf("--duration %q accepted", bad)
		}
	}
}

// TestBenchClockEndsOnceSteady: with early, the clock ends the round
// once the median of the last three intervals after the warm-up is
// within 10% of the three before, and not while the rate still climbs.
func TestBenchClockEndsOnceSteady(t *testing.T) {
	c := &benchClock{early: true, warmup: -1}
	ctx := c.context(context.Background())
	at := time.Duration(0)
	feed := func(mib float64, window int) {
		at += time.Second
		c.sample(transfer.Sample{At: at, Length: time.Second, Bytes: int64(mib * (1 << 20)), Window: window})
	}
	// The climb, then a rate that still rises by 20% a step.
	feed(50, 16)
	feed(100, 64)
	for _, r := range []float64{200, 240, 288, 346, 415, 498} {
		feed(r, 64)
	}
	if ctx.Err() != nil {
		t.Fatalf("ended while the rate climbed: %v", context.Cause(ctx))
	}
	// Flat at 500: the three before the last three hold 415 as their
	// median until the fourth flat interval makes it 498.
	for range 3 {
		feed(500, 64)
	}
	if ctx.Err() != nil {
		t.Fatalf("ended while the median before was 20%% lower: %v", context.Cause(ctx))
	}
	feed(505, 64)
	if !errors.Is(context.Cause(ctx), errBenchSteady) || !c.ended(ctx) || !errors.Is(context.Cause(ctx), context.Canceled) {
		t.Fatalf("cause %v, want the steady end, a cancellation", context.Cause(ctx))
	}
}
