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
)

// Thresholds of the verdict: what share of a resource counts as its limit.
const (
	slowDownShare  = 0.01 // of requests
	handshakeShare = 0.05 // of the requests' time
	cpuShare       = 0.85 // of every core for the whole run
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
	if r.Machine.CPUs > 0 && r.CPU > 0 {
		busy := r.CPU.Seconds() / (s.Elapsed.Seconds() * float64(r.Machine.CPUs))
		if busy >= cpuShare {
			where := ""
			if r.ServerInProcess {
				where = " (the embedded emulator's share included)"
			}
			return Verdict{BottleneckCPU, fmt.Sprintf(
				"CPU: %.1f CPU-seconds in %.1f s on %d cores is %.0f%% of the machine%s, %.2f CPU-seconds per GiB",
				r.CPU.Seconds(), s.Elapsed.Seconds(), r.Machine.CPUs, 100*busy, where, r.CPU.Seconds()/(float64(s.Bytes)/gib))}
		}
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
	st := StatsOf(r.Samples)
	// The mean the summary's "in flight" line gives, where the run
	// counted one: the verdict says the same figure.
	inFlight := cmp.Or(s.InFlightMean, st.InFlightMean)
	perConn := 0.0 // MiB/s one request moves while it is open
	if s.RequestTime > 0 {
		perConn = float64(s.Bytes) / (1 << 20) / s.RequestTime.Seconds()
	}
	atBound := atBoundShareOf(r.Samples, inFlightShare*float64(r.MaxRequests))
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
	if s.WindowStop == transfer.WindowKnee {
		return Verdict{BottleneckKnee, fmt.Sprintf(
			"beyond the requests in flight: the window stopped at %d of the %d allowed, where a step up bought no more throughput (%.1f MB/s per request); the server's share, a link or the destination sets the pace",
			s.WindowKnee, r.MaxRequests, perConn)}
	}
	return Verdict{BottleneckWork, fmt.Sprintf(
		"too little work in flight: %.1f requests in flight on average of the %d allowed, at %.1f MiB/s each; few or small objects, or the listing, kept the bound from filling",
		inFlight, r.MaxRequests, perConn)}
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
