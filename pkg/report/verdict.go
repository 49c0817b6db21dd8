package report

import (
	"cmp"
	"fmt"
	"time"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// Bottlenecks a verdict can name.
const (
	BottleneckNone        = "none"        // nothing was transferred
	BottleneckThrottling  = "throttling"  // the server answered SlowDown
	BottleneckTLS         = "tls"         // TLS handshakes took the requests' time
	BottleneckCPU         = "cpu"         // the client's cores were busy
	BottleneckNetwork     = "network"     // the network cards' line rate
	BottleneckDisk        = "disk"        // writes held the requests
	BottleneckConcurrency = "concurrency" // per-connection rate x requests in flight
	BottleneckWork        = "work"        // too little work to fill the bound
	BottleneckKnee        = "knee"        // more requests in flight bought no throughput
	BottleneckEmulator    = "emulator"    // the S3 server beside the client took the cores
	BottleneckRamp        = "ramp"        // the run was its ramp: no steady state to judge
	BottleneckMachine     = "machine"     // other processes of a shared machine took the cores
)

// Thresholds of the verdict: what share of a resource counts as its limit.
const (
	slowDownShare  = 0.01 // of requests
	handshakeShare = 0.05 // of the requests' time
	cpuShare       = 0.85 // of every core for the whole run
	serverShare    = 0.50 // of every core, taken by a server beside the client
	lineRateShare  = 0.80 // of the used cards' link speed
	writeShare     = 0.50 // of the requests' time
	inFlightShare  = 0.90 // of the bound on requests in flight ...
	atBoundShare   = 0.50 // ... in this share of the intervals
	latencyDominat = 0.50 // of the median request's time
)

// Verdict names the likely bottleneck of a run, with its evidence.
type Verdict struct {
	Bottleneck string
	// Line is one sentence: the bottleneck and the figures behind it.
	Line string
}

// Diagnose decides which resource most likely bounded r's throughput.
// The checks run from the most to the least certain evidence: a server
// that throttles, TLS handshakes that take a share of the requests' time,
// busy cores, full line rate, time spent writing, a full
// bound on requests in flight; when none holds, the run lacked work.
func Diagnose(r Run) Verdict {
	s := r.Summary
	if s.Bytes == 0 || s.Requests == 0 || s.Elapsed <= 0 {
		return Verdict{BottleneckNone, "nothing was transferred: no verdict"}
	}
	rate := Gibps(s.Bytes, s.Elapsed)
	if share := float64(s.SlowDowns) / float64(s.Requests); share >= slowDownShare {
		return Verdict{BottleneckThrottling, fmt.Sprintf(
			"server throttling: %d SlowDown responses (%.1f%% of %d requests) cut the requests in flight; spread keys over more prefixes or lower max_concurrent_requests",
			s.SlowDowns, 100*share, s.Requests)}
	}
	if share := r.TLS.Share(s.RequestTime); share >= handshakeShare {
		advice := "every new connection pays one, a full one unless it resumes a session; fewer connections (max_concurrent_requests) or resumed sessions cost less"
		if r.TLS.Resumed*10 >= r.TLS.Handshakes*9 {
			advice = "the sessions resume already, so what is left is a handshake per new connection: fewer connections (max_concurrent_requests) cost less"
		}
		return Verdict{BottleneckTLS, fmt.Sprintf(
			"TLS handshakes: %d handshakes (%d resumed), %.1f ms each on average, took %.1f%% of the request time: %s",
			r.TLS.Handshakes, r.TLS.Resumed, r.TLS.MeanMS(), 100*share, advice)}
	}
	if v, ok := cpuVerdict(r); ok {
		return v
	}
	if line := usedLineRate(r.Machine.NICs); line > 0 {
		mbps := float64(s.Bytes) * 8 / 1e6 / s.Elapsed.Seconds()
		if share := mbps / float64(line); share >= lineRateShare {
			return Verdict{BottleneckNetwork, fmt.Sprintf(
				"network cards' line rate: %.2f Gbit/s is %.0f%% of the %.0f Gbit/s the used cards' links carry",
				mbps/1000, 100*share, float64(line)/1000)}
		}
	}
	if s.RequestTime > 0 {
		if share := float64(s.WriteTime) / float64(s.RequestTime); share >= writeShare {
			return Verdict{BottleneckDisk, fmt.Sprintf(
				"the disk: requests spent %.0f%% of their time waiting on writes (%.1f of %.1f request-seconds); see s3pd bench disk",
				100*share, s.WriteTime.Seconds(), s.RequestTime.Seconds())}
		}
	}
	perConn := 0.0 // MiB/s one request moves while it is open
	if s.RequestTime > 0 {
		perConn = float64(s.Bytes) / (1 << 20) / s.RequestTime.Seconds()
	}
	steady := r.Steady()
	if len(r.Samples) > 1 && !steady.OK {
		// A ramp and a tail: what filled or did not fill the window
		// says nothing of a steady state.
		return Verdict{BottleneckRamp, fmt.Sprintf(
			"no steady state: the run lasted %.1f s and the warm-up %.1f s of it, leaving %d intervals (want %d): the figure is mostly the ramp and the tail; --duration 30s reads the data again for a steady figure",
			s.Elapsed.Seconds(), min(steady.Warmup, s.Elapsed).Seconds(), steady.Intervals, MinSteady)}
	}
	// The requests in flight are judged over the steady part alone.
	samples := steadySamples(r.Samples, steady.Warmup)
	st := StatsOf(samples)
	// The mean the summary's "in flight" line gives, where the run
	// counted one: the verdict says the same figure.
	inFlight := cmp.Or(s.InFlightMean, st.InFlightMean)
	atBound := atBoundShareOf(samples, inFlightShare*float64(r.MaxRequests))
	if r.MaxRequests > 0 && atBound >= atBoundShare {
		why := ""
		if p50t, p50r := s.TTFB.Quantile(0.5), s.Request.Quantile(0.5); p50r > 0 && float64(p50t) >= latencyDominat*float64(p50r) {
			why = fmt.Sprintf("; the first byte takes %s of a median request's %s, so larger parts or more requests in flight would help", round(p50t), round(p50r))
		} else {
			why = "; more requests in flight (max_concurrent_requests) would help"
		}
		return Verdict{BottleneckConcurrency, fmt.Sprintf(
			"per-connection rate x requests in flight: %.1f MiB/s per request x %.1f in flight on average (at the bound of %d in %.0f%% of the run) is about %s%s",
			perConn, inFlight, r.MaxRequests, 100*atBound, RateOfGibps(rate), why)}
	}
	if v, ok := machineVerdict(r); ok {
		return v
	}
	if s.WindowStop == transfer.WindowKnee {
		return Verdict{BottleneckKnee, fmt.Sprintf(
			"beyond the requests in flight: the window stopped at %d of the %d allowed, where a step up bought no more throughput (%.1f MB/s per request); the server's share, a link or the destination sets the pace",
			s.WindowKnee, r.MaxRequests, perConn)}
	}
	return Verdict{BottleneckWork, fmt.Sprintf(
		"too little work in flight: %.1f requests in flight on average of the %d allowed, at %.1f MiB/s each; few or small objects, or the listing, kept the bound from filling",
		inFlight, r.MaxRequests, perConn)}
}

// cpuVerdict names the cores as the bottleneck when they were busy: the
// client's, or a server's beside it (bench's emulator), which makes the
// figure a floor of what the client does against S3.
func cpuVerdict(r Run) (Verdict, bool) {
	s := r.Summary
	if r.Machine.CPUs <= 0 || (r.CPU <= 0 && r.Server == nil) {
		return Verdict{}, false
	}
	secs, cores := s.Elapsed.Seconds(), float64(r.Machine.CPUs)
	client, server := r.CPU.Seconds()/secs, 0.0
	if r.Server != nil {
		server = r.Server.CPU.Seconds() / secs
	}
	perGiB := r.CPU.Seconds() / (float64(s.Bytes) / gib)
	busy := (client + server) / cores
	switch {
	case r.Server != nil && server >= client && (busy >= cpuShare || server/cores >= serverShare):
		return Verdict{BottleneckEmulator, fmt.Sprintf(
			"the emulator and the shared machine: the emulator used %.1f of %d cores and the client %.1f (%.2f CPU-seconds per GiB), %.0f%% of the machine together: this figure is a floor; against S3 the client has the cores to itself",
			server, r.Machine.CPUs, client, perGiB, 100*busy)}, true
	case busy < cpuShare:
		return Verdict{}, false
	}
	where := ""
	switch {
	case r.ServerInProcess:
		where = " (the embedded emulator's share included)"
	case r.Server != nil:
		where = fmt.Sprintf(" with the emulator's %.1f cores", server)
	}
	return Verdict{BottleneckCPU, fmt.Sprintf(
		"CPU: %.1f CPU-seconds in %.1f s on %d cores is %.0f%% of the machine%s, %.2f CPU-seconds per GiB",
		r.CPU.Seconds(), secs, r.Machine.CPUs, 100*busy, where, perGiB)}, true
}

// machineVerdict names a machine that other processes kept busy (a
// shared machine) beside the client and the emulator: when they took at
// least as many cores as either and the machine was busy, the client had
// less than the cores it would have alone.
func machineVerdict(r Run) (Verdict, bool) {
	secs, cores := r.Summary.Elapsed.Seconds(), float64(r.Machine.CPUs)
	if r.MachineCPU <= 0 || cores <= 0 || secs <= 0 {
		return Verdict{}, false
	}
	client, server := r.CPU.Seconds()/secs, 0.0
	if r.Server != nil {
		server = r.Server.CPU.Seconds() / secs
	}
	all := r.MachineCPU.Seconds() / secs
	others := max(all-client-server, 0)
	if others < max(client, server) || all/cores < cpuShare {
		return Verdict{}, false
	}
	return Verdict{BottleneckMachine, fmt.Sprintf(
		"the shared machine: its %d cores were %.0f%% busy, and other processes took %.1f of them beside the client's %.1f and the emulator's %.1f: this figure is a floor; run it on a quiet machine",
		r.Machine.CPUs, 100*all/cores, others, client, server)}, true
}

// steadySamples are the samples that began at or after warmup, and the
// run's last (shorter) one, as StatsOf expects them.
func steadySamples(samples []transfer.Sample, warmup time.Duration) []transfer.Sample {
	for i, s := range samples {
		if s.At-s.Length >= warmup {
			return samples[i:]
		}
	}
	return samples
}

// atBoundShareOf is the share of the intervals (the run's last, shorter
// one left out) that ended with at least bound requests in flight.
func atBoundShareOf(samples []transfer.Sample, bound float64) float64 {
	if len(samples) > 1 {
		samples = samples[:len(samples)-1]
	}
	if len(samples) == 0 || bound <= 0 {
		return 0
	}
	n := 0
	for _, s := range samples {
		if float64(s.InFlight) >= bound {
			n++
		}
	}
	return float64(n) / float64(len(samples))
}

// usedLineRate is the link speed, in Mbps, of the cards a run used, or 0
// when any of them does not report one.
func usedLineRate(nics []NIC) int {
	total := 0
	for _, n := range nics {
		if !n.Used {
			continue
		}
		if n.SpeedMbps <= 0 {
			return 0
		}
		total += n.SpeedMbps
	}
	return total
}

func round(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(100 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}
