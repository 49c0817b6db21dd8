package config

import "fmt"

// ConnectionBandwidth is the throughput one connection to S3 is expected to
// carry (S3's guidance is 85-90 MB/s): target_bandwidth divided by it gives
// the number of connections.
const ConnectionBandwidth = 90 << 20

// MaxTunedConnections bounds the connections target_bandwidth may ask for.
const MaxTunedConnections = 4096

// Derivation records one value Derive computed.
type Derivation struct {
	// Setting is the derived setting; From names what it came from.
	Setting, From string
	// Overrode is set when the derived value replaced a value some source
	// set at a lower precedence: that value, as text.
	Overrode string
}

// Derive fills the concurrency settings that no source set (explicit holds
// the names some source set) from those that were, as DeriveRanked with
// every explicit setting at the same precedence.
func (s *Settings) Derive(explicit map[string]bool) []Derivation {
	rank := map[string]int{}
	for name, set := range explicit {
		if set {
			rank[name] = 1
		}
	}
	return s.DeriveRanked(rank)
}

// DeriveRanked fills the concurrency settings that no source set from
// those that were. rank gives the precedence of the source of each
// setting some source set (higher wins; absent or 0: not set):
//   - max_concurrent_requests set: workers and threads that are not set are
//     derived from it (threads keeps its value, at most the cap; workers =
//     ceil(max/threads)); when only workers is set, threads = max/workers.
//   - workers or threads set, max_concurrent_requests not: it becomes
//     workers*threads.
//   - workers or threads set at a higher precedence than
//     max_concurrent_requests: the lower setting does not cap them; it
//     becomes workers*threads and the Derivation says what it overrode.
//   - target_bandwidth set (preferred_transfer_client not classic) at a
//     higher precedence than all three, or none of them set: connections =
//     ceil(min(target, max_bandwidth) / ConnectionBandwidth), bounded to
//     [1, MaxTunedConnections], become max_concurrent_requests, and
//     workers and threads follow as above (overriding lower ones).
//   - multipart_chunksize set below multipart_threshold, which is not set:
//     the threshold follows it down, so every object larger than one part
//     is split, as the original s3pd's --partsize did.
func (s *Settings) DeriveRanked(rank map[string]int) []Derivation {
	const mcr = "max_concurrent_requests"
	var out []Derivation
	overrode := map[string]string{}
	add := func(name, from string) {
		out = append(out, Derivation{Setting: name, From: from, Overrode: overrode[name]})
	}
	// drop forgets a setting set at a lower precedence than the one
	// that replaces it, remembering its value for the Derivation.
	drop := func(name string) {
		if rank[name] > 0 {
			overrode[name] = s.Format(name)
		}
	}
	rW, rT, rM, rTB := rank["workers"], rank["threads"], rank[mcr], rank["target_bandwidth"]
	from := mcr
	if rTB > 0 && s.TargetBandwidth > 0 && s.PreferredTransferClient != ClientClassic && rTB > max(rW, rT, rM) {
		for _, name := range []string{"workers", "threads", mcr} {
			drop(name)
		}
		if rW > 0 || rT > 0 {
			s.Threads = DefaultThreads
		}
		rW, rT = 0, 0
		s.MaxConcurrentRequests = TunedConnections(s.TargetBandwidth, s.MaxBandwidth)
		from = "target_bandwidth"
		add(mcr, from)
		rM = rTB
	}
	if rM > 0 && max(rW, rT) > rM {
		drop(mcr)
		rM = 0
	}
	setW, setT, setM := rW > 0, rT > 0, rM > 0
	switch {
	case setM && !setW && !setT:
		s.Threads = min(s.Threads, s.MaxConcurrentRequests)
		s.Workers = ceilDiv(s.MaxConcurrentRequests, s.Threads)
		add("threads", from)
		add("workers", from)
	case setM && setW && !setT:
		s.Threads = max(1, min(s.MaxConcurrentRequests/s.Workers, MaxThreads))
		add("threads", from)
	case setM && !setW && setT:
		s.Workers = min(ceilDiv(s.MaxConcurrentRequests, s.Threads), MaxWorkers)
		add("workers", from)
	case !setM && (setW || setT):
		s.MaxConcurrentRequests = min(s.Workers*s.Threads, MaxRequests)
		add(mcr, "workers*threads")
	}
	if rank["multipart_chunksize"] > 0 && rank["multipart_threshold"] == 0 && s.PartSize < s.MultipartThreshold {
		// The original s3pd splits every object larger than --partsize.
		s.MultipartThreshold = s.PartSize
		add("multipart_threshold", "multipart_chunksize")
	}
	return out
}

// TunedConnections is the number of connections auto-tuning opens for a
// target (and an optional cap, 0 for none) in bytes per second.
func TunedConnections(target, maxBandwidth int64) int {
	if maxBandwidth > 0 && maxBandwidth < target {
		target = maxBandwidth
	}
	n := (target + ConnectionBandwidth - 1) / ConnectionBandwidth
	return int(max(1, min(n, MaxTunedConnections)))
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// Validate checks every value against its bounds; the error is a
// *SettingError without an origin.
func (s Settings) Validate() error {
	check := func(name string, ok bool, why string) error {
		if ok {
			return nil
		}
		return &SettingError{Setting: name, Value: s.Format(name), Err: fmt.Errorf("%s", why)}
	}
	for _, err := range []error{
		check("workers", s.Workers >= 1 && s.Workers <= MaxWorkers, fmt.Sprintf("must be between 1 and %d", MaxWorkers)),
		check("threads", s.Threads >= 1 && s.Threads <= MaxThreads, fmt.Sprintf("must be between 1 and %d", MaxThreads)),
		check("max_concurrent_requests", s.MaxConcurrentRequests >= 1 && s.MaxConcurrentRequests <= MaxRequests, fmt.Sprintf("must be between 1 and %d", MaxRequests)),
		check("multipart_chunksize", s.PartSize >= 1 && s.PartSize <= MaxPartSize, "must be between 1 and 5GiB"),
		check("multipart_threshold", s.MultipartThreshold >= 1, "must be positive"),
		check("max_queue_size", s.MaxQueueSize >= 1 && s.MaxQueueSize <= MaxQueue, fmt.Sprintf("must be between 1 and %d", MaxQueue)),
		check("max_bandwidth", s.MaxBandwidth >= 0, "must not be negative"),
		check("target_bandwidth", s.TargetBandwidth >= 0, "must not be negative"),
	} {
		if err != nil {
			return err
		}
	}
	for _, name := range []string{"preferred_transfer_client", "nics", "region", "endpoint_url", "addressing_style", "log_level", "log_format"} {
		var probe Settings
		if err := probe.Set(name, s.Format(name)); err != nil {
			return &SettingError{Setting: name, Value: s.Format(name), Err: err}
		}
	}
	return nil
}
