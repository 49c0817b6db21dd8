package cmd

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// peakRSS returns the process's peak resident memory in KiB (VmHWM), or 0
// where /proc is not there. It is read from /proc rather than getrusage,
// whose ru_maxrss also counts the parent's memory when the parent started
// s3pd with vfork, as Go's os/exec does.
func peakRSS() int64 { return peakRSSOf("/proc/self/status") }

// peakRSSOf is the VmHWM of the process whose /proc status file is path,
// in KiB (0 when it cannot be read).
func peakRSSOf(path string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kib, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kib
		}
	}
	return 0
}
