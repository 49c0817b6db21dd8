package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/s3pd/s3pd/pkg/s3emu"
)

// awaitEmu waits up to d for done to hold of the emulator's counts (and
// whatever else of it done reads), woken at each change the emulator
// signals rather than polling (s3emu.Server.Await); it fails the test,
// saying what did not happen, when d passes first.
func awaitEmu(t *testing.T, emu *s3emu.Server, d time.Duration, what string, done func(s3emu.Stats) bool) s3emu.Stats {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	st, err := emu.Await(ctx, done)
	if err != nil {
		t.Fatalf("%s within %s (the emulator's counts then: %+v)", what, d, st)
	}
	return st
}

// awaitCounts waits up to 10 s for done to hold of the emulator's counts
// and returns them, held or not: the caller's checks say what is wrong.
func awaitCounts(emu *s3emu.Server, done func(s3emu.Stats) bool) s3emu.Stats {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, _ := emu.Await(ctx, done)
	return st
}

// eventually waits up to d for cond and reports whether it held. cond
// reads what another process makes and signals to no one (its files, a
// server starting to listen), so it is checked every 20 ms: the e2e
// tests' one poll, for the states no event announces.
func eventually(d time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); !cond(); {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond) // no event to wait on: see above
	}
	return true
}
