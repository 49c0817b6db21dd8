//go:build netns

package netnstest

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkFleet times four nodes landing the same prefix, all started at
// once: as a fleet (`get --fleet K/4 --peers ...`, each node's share from
// S3, the rest from its peers over the bridge) against four independent
// gets, in the same round, through the same shared link to the source
// (tbf, S3PD_FLEET_RATE_MBIT, default 200 Mbit/s) while the bridge between
// the nodes is uncapped. Each contender is timed from the start of the
// first process to the exit of the last (a fleet node lingers until every
// peer said it is done, so this is the time until all have landed, and
// told each other). The two go first in turn, round by round. Reported per
// round: solo-s and fleet-s, fleet-x (fleet's time over the independent
// gets'), and over the dataset what the emulator's handlers wrote (bodies
// and listings: solo-sent-x, fleet-sent-x) and what left the source on its
// link (headers and framing included: solo-wire-x, fleet-wire-x);
// fleet-unverified, the objects the fleet's nodes landed without verifying
// them (the emulator gives every object a CRC, so it should be 0). Every
// landing is checked byte for byte outside the timer. S3PD_FLEET_DATASET
// sets the group (default fleet:16:4MiB).
func BenchmarkFleet(b *testing.B) {
	// One fabric per invocation: namespaces, emulator and binary are made
	// once, outside the timer, and the rounds share them.
	rate := 200
	if v := os.Getenv("S3PD_FLEET_RATE_MBIT"); v != "" {
		var err error
		if rate, err = strconv.Atoi(v); err != nil {
			b.Fatalf("S3PD_FLEET_RATE_MBIT=%q: %v", v, err)
		}
	}
	group := "fleet:16:4MiB"
	if v := os.Getenv("S3PD_FLEET_DATASET"); v != "" {
		group = v
	}
	const nodes = 4
	fe := newFleetEnv(b, nodes, rate, group)
	dir := b.TempDir()
	size := float64(fe.data.Bytes())
	peers := fe.peerList()
	var solo, fleet time.Duration
	var soloSent, fleetSent int64
	var soloWire, fleetWire uint64
	unverified := 0 // objects a fleet node landed without verifying them
	b.ResetTimer()
	b.StopTimer()
	for round := range b.N {
		// Who goes first alternates by round, also across -count's
		// invocations (each of one round, with -benchtime 1x).
		first := fleetBenchRounds.Add(1)
		for k := range 2 {
			asFleet := (first+int64(k))%2 == 1
			var extra func(int) []string
			if asFleet {
				extra = func(i int) []string { return fe.fleetArgs(i, peers, 30*time.Second) }
			}
			d := dests(b, dir, nodes)
			fe.emu.ResetStats()
			wire0, err := fe.TxBytes(fe.Source, fe.SourceIf)
			if err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			runs := fe.startGets(b, d, extra)
			waitRuns(b, runs, 5*time.Minute)
			took := time.Since(start)
			sent := fe.emu.Stats().BytesSent
			wire, err := fe.TxBytes(fe.Source, fe.SourceIf)
			if err != nil {
				b.Fatal(err)
			}
			wire -= wire0
			for _, r := range runs {
				if r.err != nil {
					b.Fatalf("fleet %v: %s", asFleet, r)
				}
				if err := fe.checkLanded(r.dest); err != nil {
					b.Fatalf("fleet %v: node %d: %v", asFleet, r.node, err)
				}
				if bad := r.unverified(); len(bad) > 0 {
					if asFleet {
						unverified += len(bad)
					}
					b.Logf("fleet %v: node %d: objects not verified: %s", asFleet, r.node, strings.Join(bad, ", "))
				}
			}
			if asFleet {
				fleet += took
				fleetSent += sent
				fleetWire += wire
			} else {
				solo += took
				soloSent += sent
				soloWire += wire
			}
			var slow []string
			for _, r := range runs {
				sum, _ := r.summary()
				slow = append(slow, fmt.Sprintf("%v (run %.1fs) r%d h%d s%d", r.took.Round(100*time.Millisecond), sum.Seconds, sum.Retries, sum.Hedged, sum.Splits))
			}
			b.Logf("round %d fleet=%v: %v, server sent %.3fx the dataset, its link %.3fx; nodes: %s; source link: %s", round, asFleet, took.Round(time.Millisecond),
				float64(sent)/size, float64(wire)/size, strings.Join(slow, ", "), fe.linkDrops(b))
		}
	}
	n := float64(b.N)
	b.ReportMetric(solo.Seconds()/n, "solo-s")
	b.ReportMetric(float64(soloSent)/size/n, "solo-sent-x")
	b.ReportMetric(float64(soloWire)/size/n, "solo-wire-x")
	b.ReportMetric(fleet.Seconds()/n, "fleet-s")
	b.ReportMetric(fleet.Seconds()/solo.Seconds(), "fleet-x")
	b.ReportMetric(float64(fleetSent)/size/n, "fleet-sent-x")
	b.ReportMetric(float64(fleetWire)/size/n, "fleet-wire-x")
	b.ReportMetric(float64(unverified)/n, "fleet-unverified")
	b.ReportMetric(float64(rate), "link-Mbit/s")
}

// fleetBenchRounds counts BenchmarkFleet's rounds in this process.
var fleetBenchRounds atomic.Int64
