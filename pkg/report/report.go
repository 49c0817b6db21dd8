// Package report turns one run of the engine into what a storage engineer
// reads: the statistics of its time series, a verdict naming the likely
// bottleneck with its evidence, and a self-contained HTML page with the
// settings, the machine, the totals and charts (inline CSS and SVG, no
// network reference, so it opens on an air-gapped machine). It renders
// what it is given and gathers nothing itself.
package report

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// Run is everything a report shows about one run.
type Run struct {
	// Command is what ran ("bench", "get") and Source what it read
	// (an s3:// URL), Dest where it wrote ("" for none).
	Command, Source, Dest string
	// Version is s3pd's version.
	Version string
	// Started is when the run began.
	Started time.Time
	// Status is "ok", "failed" or "interrupted"; Error says why when the
	// run as a whole failed.
	Status, Error string
	// Settings are the effective settings, secrets already redacted.
	Settings []Setting
	// Machine is where it ran.
	Machine Machine
	// Summary is the engine's summary.
	Summary transfer.Summary
	// Samples are the run's time series, in order.
	Samples []transfer.Sample
	// CPU is the process's CPU time (user and system) during the run;
	// PeakRSSKiB its peak resident memory.
	CPU        time.Duration
	PeakRSSKiB int64
	// MaxRequests is the bound on requests in flight the run had.
	MaxRequests int
	// ServerInProcess says the S3 server ran in this process (the
	// embedded emulator), so CPU and memory include it.
	ServerInProcess bool
	// Transport is how the requests travelled ("HTTPS", "plain HTTP",
	// "HTTPS (self-signed, in-process)"); TLS is what its handshakes
	// cost, as the client counted them (zero over plain HTTP).
	Transport string
	TLS       TLS
	// Server, when set, is the S3 server's process beside the client
	// (bench's emulator): its CPU time during the run and its peak
	// memory, apart from CPU and PeakRSSKiB, the client's.
	Server *Process
	// Warmup is the time left out of the steady figure at the start
	// (below 0: until the window settled, WarmupOf).
	Warmup time.Duration
	// Classes are the run's objects by class (bench).
	Classes []Class
	// MachineCPU is the CPU time every process of the machine used
	// during the run (0: not known): beside CPU and Server's, what other
	// processes of a shared machine took.
	MachineCPU time.Duration
	// Fleet, when set, is this node's part in a --fleet run.
	Fleet *Fleet
}

// Fleet is one node's part in a fleet that fetched a prefix once: where
// its bytes came from and went.
type Fleet struct {
	// Node is this node's index of Nodes.
	Node, Nodes int
	// FromSource and FromPeers are the bytes read from S3 and from the
	// other nodes, ToPeers those this node served them.
	FromSource, FromPeers, ToPeers int64
	// Bypassed names each peer dropped for the run, and why.
	Bypassed []string
	// Trusted is the objects taken from peers with nothing of S3's to
	// verify them by (--fleet-trust-peers).
	Trusted int64
}

// Process is what a process beside the client used.
type Process struct {
	CPU        time.Duration
	PeakRSSKiB int64
}

// Class is one class of a run's objects (the emulator's dataset groups,
// or sizes): what it moved over the whole run and its requests' time to
// first byte.
type Class struct {
	Name string
	// Size is its objects' size (0: sizes vary).
	Size                   int64
	Objects, Bytes         int64
	TTFB50, TTFB90, TTFB99 time.Duration
}

// Steady is the run's steady part (SteadyOf with its warm-up).
func (r Run) Steady() Steady { return SteadyOf(r.Samples, r.Warmup) }

// TLS is the client's count of a run's TLS handshakes.
type TLS struct {
	// Handshakes completed, and how many of them resumed a session.
	Handshakes, Resumed int64
	// Time is their summed wall time.
	Time time.Duration
}

// Share is the handshakes' share of the run's summed request time (0
// when unknown): a handshake is part of the request that dialled it.
func (t TLS) Share(requestTime time.Duration) float64 {
	if requestTime <= 0 {
		return 0
	}
	return float64(t.Time) / float64(requestTime)
}

// MeanMS is the mean time of one handshake, in milliseconds: Time is
// summed over the connections, which handshake at once.
func (t TLS) MeanMS() float64 {
	if t.Handshakes <= 0 {
		return 0
	}
	return float64(t.Time) / float64(t.Handshakes) / float64(time.Millisecond)
}

// Setting is one effective setting and where it came from.
type Setting struct {
	Name, Value, Origin string
}

// Machine describes the host of a run.
type Machine struct {
	Hostname string
	CPUs     int
	OS, Arch string
	Kernel   string
	NICs     []NIC
}

// NIC is one network interface and its link speed (0 when unknown).
type NIC struct {
	Name      string
	SpeedMbps int
	// Used says the run's requests went through it (one of --nics, or the
	// default route's interface).
	Used bool
}

// Statuses of a run.
const (
	StatusOK          = "ok"
	StatusFailed      = "failed"
	StatusInterrupted = "interrupted"
)

// WriteFile renders r into path through a temporary name in the same
// directory and a rename, so path never holds half a report.
func WriteFile(path string, r Run) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write report %s: %w", path, err)
	}
	tmp := f.Name()
	err = WriteHTML(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o644)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write report %s: %w", path, err)
	}
	return nil
}

// gib is a GiB in bytes, as a float.
const gib = float64(1 << 30)

// Gibps is a throughput in gibibits per second.
func Gibps(bytes int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(bytes) * 8 / gib / d.Seconds()
}
