package transfer

import (
	"fmt"
	"math"
)

// TLSStartWindow is where the window of requests in flight starts over
// HTTPS (the job sets Options.StartWindow to it). Each connection the
// start opens costs a TLS handshake on both ends before its first byte,
// so the start opens no more than the climb can show are needed: on two
// cores over loopback, 32 connections at the start held 256 x 1 MiB at
// 0.87x the speed of 16 while the window settled back to 16, and the
// climb doubles from 16 where its steps pay, one round trip later than
// from 32.
const TLSStartWindow = 16

// AdaptiveRule is the window's rule in one sentence, built from the
// constants the rule uses: the --adaptive flag's help, docs/CONFIG.md
// and docs/ARCHITECTURE.md all carry it (a test checks that the docs
// do), so none of them can drift from the code.
func AdaptiveRule() string {
	return fmt.Sprintf("the window of requests in flight starts at %d (%d over HTTPS), at most max_concurrent_requests; "+
		"while it is full it doubles each time the server answered the last step, "+
		"and holds at the knee, where a doubling buys less than %d %% more throughput, "+
		"or a quarter below it while that moves %d %% as much; "+
		"on SlowDown it drops to what the server was serving, doubles back to that level after %d round trips without one, "+
		"and probes above it by one every %v",
		startWindow, TLSStartWindow, int(kneeGain*100), int(math.Round((1-kneeHold)*100)), recoverAfter, probeEvery)
}
