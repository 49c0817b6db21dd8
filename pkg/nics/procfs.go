package nics

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Route flags from <linux/route.h>.
const (
	rtfUp     = 0x0001
	rtfReject = 0x0200
)

// defaultRouteInterfaces returns the interface holding the lowest-metric
// IPv4 default route in procNet/route; when there is none, the one holding
// the lowest-metric IPv6 default route in procNet/ipv6_route (which mixes
// every table, so IPv4 is preferred). A missing file counts as no route.
func defaultRouteInterfaces(procNet string) ([]string, error) {
	v4, err := parseDefaultRoute(filepath.Join(procNet, "route"), parseRouteLine)
	if err != nil {
		return nil, err
	}
	if v4 != "" {
		return []string{v4}, nil
	}
	v6, err := parseDefaultRoute(filepath.Join(procNet, "ipv6_route"), parseIPv6RouteLine)
	if err != nil || v6 == "" {
		return nil, err
	}
	return []string{v6}, nil
}

// defaultLine is one default route: its interface and metric.
type defaultLine struct {
	dev    string
	metric uint64
}

// parseDefaultRoute scans a route file with parse, which returns ok for a
// default route that is up and not a reject route.
func parseDefaultRoute(path string, parse func(string) (defaultLine, bool)) (string, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read default route: %w", err)
	}
	defer f.Close()
	best, found := defaultLine{}, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		d, ok := parse(sc.Text())
		if ok && (!found || d.metric < best.metric) {
			best, found = d, true
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("read default route %s: %w", path, err)
	}
	return best.dev, nil
}

// parseRouteLine reads one line of /proc/net/route:
// Iface Destination Gateway Flags RefCnt Use Metric Mask MTU Window IRTT.
func parseRouteLine(line string) (defaultLine, bool) {
	f := strings.Fields(line)
	if len(f) < 8 || f[0] == "Iface" {
		return defaultLine{}, false
	}
	flags, err1 := strconv.ParseUint(f[3], 16, 32)
	metric, err2 := strconv.ParseUint(f[6], 10, 32)
	if err1 != nil || err2 != nil {
		return defaultLine{}, false
	}
	if f[1] != "00000000" || f[7] != "00000000" || flags&rtfUp == 0 || flags&rtfReject != 0 {
		return defaultLine{}, false
	}
	return defaultLine{dev: f[0], metric: metric}, true
}

// parseIPv6RouteLine reads one line of /proc/net/ipv6_route:
// dest plen src splen nexthop metric refcnt use flags dev (hex fields).
func parseIPv6RouteLine(line string) (defaultLine, bool) {
	f := strings.Fields(line)
	if len(f) < 10 {
		return defaultLine{}, false
	}
	metric, err1 := strconv.ParseUint(f[5], 16, 32)
	flags, err2 := strconv.ParseUint(f[8], 16, 32)
	if err1 != nil || err2 != nil {
		return defaultLine{}, false
	}
	if strings.Trim(f[0], "0") != "" || f[1] != "00" || f[9] == "lo" ||
		flags&rtfUp == 0 || flags&rtfReject != 0 {
		return defaultLine{}, false
	}
	return defaultLine{dev: f[9], metric: metric}, true
}

// readSysfs fills speed, driver and bridge from dir (/sys/class/net/NAME);
// anything unreadable is left empty.
func readSysfs(iface *Interface, dir string) {
	if b, err := os.ReadFile(filepath.Join(dir, "speed")); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && n > 0 {
			iface.SpeedMbps = n
		}
	}
	if target, err := os.Readlink(filepath.Join(dir, "device", "driver")); err == nil {
		iface.Driver = filepath.Base(target)
	} else if b, err := os.ReadFile(filepath.Join(dir, "uevent")); err == nil && iface.Driver == "" {
		// Virtual devices have no device/ link; uevent may still say
		// DEVTYPE (bridge, vlan). Keep the driver empty but note bridges.
		iface.Bridge = strings.Contains(string(b), "DEVTYPE=bridge")
	}
	if _, err := os.Stat(filepath.Join(dir, "bridge")); err == nil {
		iface.Bridge = true
	}
}

// readRPFilter returns the effective IPv4 reverse-path filter of the
// interface: the larger of conf/all and conf/NAME, as the kernel uses; -1
// when unreadable.
func readRPFilter(procSys, name string) int {
	read := func(dev string) int {
		b, err := os.ReadFile(filepath.Join(procSys, "net", "ipv4", "conf", dev, "rp_filter"))
		if err != nil {
			return -1
		}
		n, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			return -1
		}
		return n
	}
	// A VLAN named eth0.100 appears as eth0/100 under /proc/sys.
	own := read(strings.ReplaceAll(name, ".", "/"))
	if own < 0 {
		return -1
	}
	return max(own, read("all"))
}
