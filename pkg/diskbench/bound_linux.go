package diskbench

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Bound says which side would limit a pull into the measured directory:
// the disk's best durable rate against the network's rate (bytes per
// second; 0 when unknown).
func Bound(results []Result, network float64) string {
	var best Result
	for _, r := range results {
		if r.Unsupported == "" && r.BytesPerSecond() > best.BytesPerSecond() {
			best = r
		}
	}
	disk := best.BytesPerSecond()
	switch {
	case disk == 0:
		return "no mode could be measured"
	case network <= 0:
		return fmt.Sprintf("the disk takes %s with %s; the network's rate is unknown (give --network-rate, or use NICs that report a link speed)", rate(disk), best.Mode)
	case disk < network:
		return fmt.Sprintf("the disk would bound a pull: %s with %s, below the network's %s", rate(disk), best.Mode, rate(network))
	}
	return fmt.Sprintf("the network would bound a pull: it carries %s, below the disk's %s with %s", rate(network), rate(disk), best.Mode)
}

func rate(bps float64) string {
	return fmt.Sprintf("%.2f GiB/s (%.1f Gbit/s)", bps/(1<<30), bps*8/1e9)
}

// loopMajor is the block major number of loop devices.
const loopMajor = 7

// OnLoopDevice reports whether dir's file system lies on a loop device,
// whose "disk" is a file in another file system's page cache.
func OnLoopDevice(dir string) bool {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return false
	}
	return unix.Major(st.Dev) == loopMajor
}
