package cmd

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"time"
)

// machineCPU is the CPU time every process of the machine used so far,
// from /proc/stat's first line (every state but idle and iowait), 0
// where it cannot be read: beside the client's and the emulator's, it
// tells what other processes of a shared machine took.
func machineCPU() time.Duration {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return 0
	}
	fields := strings.Fields(sc.Text())
	if len(fields) < 5 || fields[0] != "cpu" {
		return 0
	}
	var busy int64
	for i, v := range fields[1:] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0
		}
		// user nice system idle iowait irq softirq steal (guest and
		// guest_nice are counted in user and nice already).
		if i == 3 || i == 4 || i >= 8 {
			continue
		}
		busy += n
	}
	return time.Duration(busy) * time.Second / clockTicks
}
