package config

import "fmt"

// ConnectionBandwidth is the throughput one connection to S3 is expected to
// carry (S3's guidance is 85-90 MB/s): target_bandwidth divided by it gives
// the number of connections.
const ConnectionBandwidth = 90 << 20

// MaxTunedConnections bounds the connections target_bandwidth may ask for.
const MaxTunedConnections = 4096

// BudgetThreads is how many ranges per object the budget counts for each
// worker when workers is set and threads is not: the original s3pd's
// default, so its command lines keep their request counts.
const BudgetThreads = 8

// Derivation records one value Derive computed.
type Derivation struct {
	// Setting is the derived setting; From names what it came from.
	Setting, From string
	// Overrode is set when the derived value replaced a value some source
	// set at a lower precedence: that value, as text.
	Overrode string
}

// Budget rules: which one DeriveRanked applied to the request budget.
const (
	BudgetFromRequests  = "max_concurrent_requests"
	BudgetFromWorkers   = "workers*threads"
	BudgetFromBandwidth = "target_bandwidth"
	BudgetDefault       = "default"
)

// Derive computes the budget and fills what follows from it (explicit
// holds the names some source set), as DeriveRanked with every explicit
// setting at the same precedence.
func (s *Settings) Derive(explicit map[string]bool) ([]Derivation, string) {
	rank := map[string]int{}
	for name, set := range explicit {
		if set {
			rank[name] = 1
		}
	}
	return s.DeriveRanked(rank)
}

// DeriveRanked computes the request budget, max_concurrent_requests (the
// requests in flight overall), and returns what it derived and the rule
// it applied (BudgetFrom...). rank gives the precedence of the source of
// each setting some source set (higher wins; absent or 0: not set).
//
// Workers bounds the objects open at once, threads (0: none) the ranges
// in flight of one object; the budget is shared by all of them, and
// max_concurrent_requests derives neither. The rules:
//   - target_bandwidth set (preferred_transfer_client not classic) at a
//     higher precedence than workers, threads and max_concurrent_requests,
//     or none of them set: the budget is ceil(min(target, max_bandwidth) /
//     ConnectionBandwidth) connections, in [1, MaxTunedConnections].
//   - else workers or threads set, and max_concurrent_requests not set at
//     the same or a higher precedence: the budget is workers x threads
//     (threads not set counts BudgetThreads), at most MaxRequests, as the
//     original s3pd and the presets count requests.
//   - else max_concurrent_requests, set or default.
//
// A value set at a lower precedence than the budget's source never caps
// it: such a max_concurrent_requests is replaced by the budget; when the
// budget comes from max_concurrent_requests or target_bandwidth, such a
// threads becomes 0 (no cap) and workers below the budget (set lower, or
// not set) becomes the budget, so that many small objects fill it. The
// Derivation says what each replaced.
//
// multipart_chunksize set below multipart_threshold, which is not set:
// the threshold follows it down, so every object larger than one part is
// split, as the original s3pd's --partsize did.
func (s *Settings) DeriveRanked(rank map[string]int) ([]Derivation, string) {
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
	rule, rBudget := BudgetDefault, 0
	switch {
	case s.TargetBandwidth > 0 && s.PreferredTransferClient != ClientClassic && rTB > max(rW, rT, rM):
		rule, rBudget = BudgetFromBandwidth, rTB
		drop(mcr)
		s.MaxConcurrentRequests = TunedConnections(s.TargetBandwidth, s.MaxBandwidth)
		add(mcr, rule)
	case max(rW, rT) > 0 && max(rW, rT) > rM:
		rule, rBudget = BudgetFromWorkers, max(rW, rT)
		drop(mcr)
		threads := s.Threads
		if threads == 0 {
			threads = BudgetThreads
		}
		s.MaxConcurrentRequests = min(s.Workers*threads, MaxRequests)
		add(mcr, rule)
	case rM > 0:
		rule, rBudget = BudgetFromRequests, rM
	}
	if rule == BudgetFromRequests || rule == BudgetFromBandwidth {
		if rT > 0 && rT < rBudget && s.Threads != 0 {
			// A per-object cap from a lower precedence would hold a
			// single object below the budget.
			drop("threads")
			s.Threads = 0
			add("threads", rule)
		}
		if rW < rBudget && s.Workers < s.MaxConcurrentRequests {
			// So would fewer objects open than requests, for small ones.
			drop("workers")
			s.Workers = min(s.MaxConcurrentRequests, MaxWorkers)
			add("workers", rule)
		}
	}
	if rank["multipart_chunksize"] > 0 && rank["multipart_threshold"] == 0 && s.PartSize < s.MultipartThreshold {
		// The original s3pd splits every object larger than --partsize.
		s.MultipartThreshold = s.PartSize
		add("multipart_threshold", "multipart_chunksize")
	}
	return out, rule
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
		check("threads", s.Threads >= 0 && s.Threads <= MaxThreads, fmt.Sprintf("must be between 0 (no cap) and %d", MaxThreads)),
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
