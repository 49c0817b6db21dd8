package raid

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// System names the places Discover reads, so tests can point it at a fake
// tree. The zero value is not useful; start from DefaultSystem.
type System struct {
	SysRoot   string // sysfs root, normally /sys
	DevRoot   string // device nodes, normally /dev
	MountInfo string // normally /proc/self/mountinfo
}

// DefaultSystem reads the running machine.
func DefaultSystem() System {
	return System{SysRoot: "/sys", DevRoot: "/dev", MountInfo: "/proc/self/mountinfo"}
}

// blockInfo is what sysfs says about one whole block device.
type blockInfo struct {
	dev        Device
	devnum     string            // major:minor
	partitions map[string]string // partition name -> major:minor
	slaves     []string          // for md and dm devices
}

// Discover lists the whole block devices under SysRoot/block, except RAM
// disks and empty devices, with size, model, kind, and why each one is
// unusable. A signature it cannot read (not root) is noted in Unchecked and
// does not by itself make the device unusable.
func (s System) Discover() ([]Device, error) {
	mounts, err := ReadMountInfo(s.MountInfo)
	if err != nil {
		return nil, fmt.Errorf("discover: %w", err)
	}
	blockDir := filepath.Join(s.SysRoot, "block")
	entries, err := os.ReadDir(blockDir)
	if err != nil {
		return nil, fmt.Errorf("discover: %w", err)
	}
	infos := map[string]*blockInfo{}
	var names []string
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, "ram") || strings.HasPrefix(name, "zram") {
			continue
		}
		bi, err := s.readBlock(name)
		if err != nil {
			return nil, fmt.Errorf("discover: %w", err)
		}
		if bi.dev.Size == 0 {
			continue
		}
		infos[name] = bi
		names = append(names, name)
	}
	sort.Strings(names)
	for _, bi := range infos {
		s.markMounts(bi, mounts)
	}
	markRoot(infos, mounts)
	var out []Device
	for _, name := range names {
		d := infos[name].dev
		s.probe(&d)
		d.Reasons = d.reasons()
		d.Usable = len(d.Reasons) == 0
		out = append(out, d)
	}
	return out, nil
}

// readBlock reads SysRoot/block/name.
func (s System) readBlock(name string) (*blockInfo, error) {
	dir := filepath.Join(s.SysRoot, "block", name)
	sectors, err := readInt(filepath.Join(dir, "size"))
	if err != nil {
		return nil, err
	}
	model := readTrim(filepath.Join(dir, "device", "model"))
	serial := readTrim(filepath.Join(dir, "device", "serial"))
	if serial == "" {
		serial = readTrim(filepath.Join(dir, "serial"))
	}
	bi := &blockInfo{
		dev: Device{
			Name: name, Path: "/dev/" + name, Size: sectors * 512,
			Model: model, Serial: serial, Kind: kindOf(name, model),
		},
		devnum:     readTrim(filepath.Join(dir, "dev")),
		partitions: map[string]string{},
		slaves:     listDir(filepath.Join(dir, "slaves")),
	}
	bi.dev.Holders = listDir(filepath.Join(dir, "holders"))
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", dir, err)
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if _, err := os.Stat(filepath.Join(p, "partition")); err != nil {
			continue
		}
		bi.dev.Partitions = append(bi.dev.Partitions, e.Name())
		bi.partitions[e.Name()] = readTrim(filepath.Join(p, "dev"))
		bi.dev.Holders = append(bi.dev.Holders, listDir(filepath.Join(p, "holders"))...)
	}
	return bi, nil
}

// markMounts fills in where a device or its partitions are mounted.
func (s System) markMounts(bi *blockInfo, mounts []Mount) {
	own := map[string]bool{bi.devnum: true}
	paths := map[string]bool{bi.dev.Path: true}
	for p, dn := range bi.partitions {
		own[dn] = true
		paths["/dev/"+p] = true
	}
	for _, m := range mounts {
		if own[m.Dev] || paths[m.Source] {
			bi.dev.MountPoints = append(bi.dev.MountPoints, m.Point)
		}
	}
}

// markRoot flags the device under "/", following arrays and device-mapper
// stacks down to their members.
func markRoot(infos map[string]*blockInfo, mounts []Mount) {
	root, ok := mountAt(mounts, "/")
	if !ok {
		return
	}
	owner := map[string]string{} // major:minor or /dev path -> whole device name
	for name, bi := range infos {
		owner[bi.devnum], owner[bi.dev.Path] = name, name
		for p, dn := range bi.partitions {
			owner[dn], owner["/dev/"+p] = name, name
		}
	}
	var mark func(name string, depth int)
	mark = func(name string, depth int) {
		bi := infos[name]
		if bi == nil || depth > 8 {
			return
		}
		bi.dev.Root = true
		for _, sl := range bi.slaves {
			if o, ok := owner["/dev/"+sl]; ok {
				mark(o, depth+1)
			}
		}
	}
	if name, ok := owner[root.Dev]; ok {
		mark(name, 0)
	} else if name, ok := owner[root.Source]; ok {
		mark(name, 0)
	}
}

// probe reads the device's signature, noting why when it cannot.
func (s System) probe(d *Device) {
	sig, err := ProbeFile(filepath.Join(s.DevRoot, d.Name), d.Size)
	switch {
	case errors.Is(err, fs.ErrPermission) && os.Geteuid() != 0:
		d.Unchecked = "cannot read " + d.Path + " (not root)"
	case errors.Is(err, fs.ErrPermission):
		d.Unchecked = "cannot read " + d.Path + ": permission denied"
	case err != nil:
		d.Unchecked = err.Error()
	default:
		d.Signature, d.Label = sig.Type, sig.Label
	}
}

func readTrim(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func readInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", path, err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", path, err)
	}
	return n, nil
}

// listDir returns the names in dir, or nil when it is missing or empty.
func listDir(dir string) []string {
	es, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}
