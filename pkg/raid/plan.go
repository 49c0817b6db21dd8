package raid

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// DefaultChunk is the md chunk (stripe unit) when a Spec leaves it zero.
const DefaultChunk = 512 << 10

// Spec is what the user asked for.
type Spec struct {
	Striping Striping // StripingMD when empty
	Devices  []string // member device paths (symlinks such as /dev/disk/by-id are resolved)
	Name     string   // md: the array is /dev/<Name>; btrfs: the filesystem label
	Mount    string   // absolute mount point
	FS       string   // md: xfs (default) or ext4; btrfs: btrfs
	Chunk    int64    // md stripe unit in bytes; 0 means DefaultChunk
	Owner    string   // "user" or "user:group" to chown the mount point to; "" to leave it
	// Fstab adds a line to FstabFile (by UUID, with nofail) when true.
	Fstab     bool
	FstabFile string
	// Force allows members that hold a filesystem, another signature or a
	// partition table; they are wiped first. It never allows the root
	// device, a mounted device or a member of another array.
	Force bool
}

// Plan is a validated Spec resolved against the devices on the machine.
type Plan struct {
	Spec     Spec
	Target   string   // what is formatted and mounted: /dev/md0, or the first btrfs member
	Members  []Device // in the order given
	Wipe     []string // forced members whose signatures are erased first
	InPlace  bool     // every member already belongs to this array or filesystem
	Warnings []string
}

var (
	namePattern  = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]*$`)
	ownerPattern = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]*(:[A-Za-z0-9_.-]*)?$`)
)

// NewPlan checks spec against the inventory from Discover and returns the
// plan, or an error naming every device it refuses and why.
func NewPlan(spec Spec, inventory []Device) (*Plan, error) {
	if err := spec.normalize(); err != nil {
		return nil, err
	}
	p := &Plan{Spec: spec}
	byPath := map[string]Device{}
	for _, d := range inventory {
		byPath[d.Path] = d
	}
	seen := map[string]bool{}
	var refused []string
	inPlace := 0
	for _, arg := range spec.Devices {
		path := resolveDevice(arg)
		d, ok := byPath[path]
		switch {
		case !ok:
			refused = append(refused, fmt.Sprintf("%s: not a whole block device in /sys/block", arg))
			continue
		case seen[path]:
			return nil, fmt.Errorf("plan: %s is listed twice", path)
		}
		seen[path] = true
		p.Members = append(p.Members, d)
		if d.Unchecked != "" {
			p.Warnings = append(p.Warnings, fmt.Sprintf("%s was not checked for data: %s", d.Path, d.Unchecked))
		}
		if why := refusal(d, spec, &inPlace, &p.Wipe); why != "" {
			refused = append(refused, d.Path+": "+why)
		}
	}
	if len(refused) > 0 {
		return nil, fmt.Errorf("plan: refusing devices:\n  %s", strings.Join(refused, "\n  "))
	}
	if inPlace > 0 && inPlace < len(p.Members) {
		return nil, fmt.Errorf("plan: only %d of %d devices belong to %s; the others would have to join an existing %s, which raid-setup does not do",
			inPlace, len(p.Members), spec.Name, spec.Striping)
	}
	p.InPlace = inPlace == len(p.Members)
	p.Target = "/dev/" + spec.Name
	if spec.Striping == StripingBtrfs {
		p.Target = p.Members[0].Path
	}
	p.Warnings = append(p.Warnings, mixWarnings(p.Members)...)
	return p, nil
}

// Checked returns an error naming the members whose first bytes could not
// be read, so whether they hold data is unknown; nil when all were read or
// the spec forces. Callers check it before Apply (a dry run need not).
func (p *Plan) Checked() error {
	var un []string
	for _, d := range p.Members {
		if d.Unchecked != "" {
			un = append(un, d.Unchecked)
		}
	}
	if len(un) == 0 || p.Spec.Force {
		return nil
	}
	return fmt.Errorf("plan: cannot tell whether these hold data: %s; pass --force to go ahead anyway", strings.Join(un, "; "))
}

// refusal says why d cannot join, or "" when it can; it counts members
// already in place and collects forced ones to wipe.
func refusal(d Device, spec Spec, inPlace *int, wipe *[]string) string {
	switch {
	case d.Root:
		return "holds the root filesystem; raid-setup never touches it, whatever the flags"
	case d.Kind == KindArray:
		return "is an md array itself"
	case spec.Striping == StripingMD && slices.Equal(d.Holders, []string{spec.Name}):
		*inPlace++
		return ""
	case spec.Striping == StripingBtrfs && d.Signature == "btrfs" && d.Label == spec.Name && len(d.Partitions) == 0:
		*inPlace++
		return ""
	case len(d.MountPoints) > 0:
		return fmt.Sprintf("mounted at %s; unmount it first (--force does not unmount)", strings.Join(d.MountPoints, ", "))
	case len(d.Holders) > 0:
		return fmt.Sprintf("member of %s; stop that first (--force does not)", strings.Join(d.Holders, ", "))
	case d.Signature != "" || len(d.Partitions) > 0:
		if spec.Force {
			*wipe = append(*wipe, d.Path)
			return ""
		}
		return strings.Join(d.reasons(), ", ") + "; pass --force to erase it"
	}
	return ""
}

// mixWarnings warns about members of different sizes or kinds.
func mixWarnings(ms []Device) []string {
	var w []string
	lo, hi := ms[0], ms[0]
	kinds := map[Kind]bool{}
	for _, d := range ms {
		if d.Size < lo.Size {
			lo = d
		}
		if d.Size > hi.Size {
			hi = d
		}
		kinds[d.Kind] = true
	}
	if lo.Size != hi.Size {
		w = append(w, fmt.Sprintf("devices differ in size (%s is %s, %s is %s): the space past %s on the larger ones is striped over fewer devices and is slower",
			lo.Path, HumanBytes(lo.Size), hi.Path, HumanBytes(hi.Size), HumanBytes(lo.Size)))
	}
	if kinds[KindInstanceStore] && kinds[KindEBS] {
		w = append(w, "mixing instance store and EBS: the stripe runs at the pace of the slowest member, and instance-store data is lost when the instance stops")
	}
	return w
}

// normalize fills defaults and validates the fields that need no devices.
func (s *Spec) normalize() error {
	if s.Striping == "" {
		s.Striping = StripingMD
	}
	if s.Name == "" {
		s.Name = "md0"
	}
	if !namePattern.MatchString(s.Name) {
		return fmt.Errorf("plan: name %q: use letters, digits, '.', '_' and '-'", s.Name)
	}
	switch s.Striping {
	case StripingMD:
		if s.FS == "" {
			s.FS = "xfs"
		}
		if s.FS != "xfs" && s.FS != "ext4" {
			return fmt.Errorf("plan: filesystem %q: --engine md formats xfs or ext4", s.FS)
		}
		if s.Chunk == 0 {
			s.Chunk = DefaultChunk
		}
		if s.Chunk < 4096 || s.Chunk > 64<<20 || s.Chunk&(s.Chunk-1) != 0 {
			return fmt.Errorf("plan: chunk %d: want a power of two from 4K to 64M", s.Chunk)
		}
	case StripingBtrfs:
		if s.FS != "" && s.FS != "btrfs" {
			return fmt.Errorf("plan: filesystem %q: --engine btrfs formats btrfs", s.FS)
		}
		s.FS = "btrfs"
		if s.Chunk != 0 {
			return fmt.Errorf("plan: btrfs stripes in fixed 64 KiB units; a chunk size applies to --engine md only")
		}
	default:
		return fmt.Errorf("plan: engine %q: want md or btrfs", s.Striping)
	}
	if !filepath.IsAbs(s.Mount) || strings.ContainsAny(s.Mount, " \t\n\\") {
		return fmt.Errorf("plan: mount point %q: want an absolute path without spaces", s.Mount)
	}
	s.Mount = filepath.Clean(s.Mount)
	if s.Mount == "/" {
		return fmt.Errorf("plan: mount point /: refusing to mount over the root")
	}
	if s.Fstab && s.FstabFile == "" {
		s.FstabFile = "/etc/fstab"
	}
	switch len(s.Devices) {
	case 0:
		return fmt.Errorf("plan: no device: striping needs at least 2")
	case 1:
		return fmt.Errorf("plan: one device (%s): striping needs at least 2", s.Devices[0])
	}
	if s.Owner != "" && !ownerPattern.MatchString(s.Owner) {
		return fmt.Errorf("plan: owner %q: want USER or USER:GROUP", s.Owner)
	}
	return nil
}

// resolveDevice follows a symlink such as /dev/disk/by-id/... to /dev/name;
// other paths are returned cleaned.
func resolveDevice(p string) string {
	if fi, err := os.Lstat(p); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return r
		}
	}
	if !strings.HasPrefix(p, "/") {
		p = "/dev/" + p
	}
	return filepath.Clean(p)
}

// ParseSize parses "512K", "1M", "4096" (bytes) into bytes; suffixes are
// powers of 1024 and case-insensitive, with an optional "iB" or "B".
func ParseSize(s string) (int64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "B"), "I")
	mult := int64(1)
	if n := len(t); n > 0 {
		if i := strings.IndexByte("KMGT", t[n-1]); i >= 0 {
			mult = 1 << (10 * (i + 1))
			t = t[:n-1]
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("parse size %q: want a number with an optional K, M, G or T", s)
	}
	return n * mult, nil
}

// HumanBytes renders n in binary units: "1.7 TiB", "512 KiB".
func HumanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	v := float64(n) / float64(div)
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d %ciB", int64(v), "KMGTPE"[exp])
	}
	return fmt.Sprintf("%.1f %ciB", v, "KMGTPE"[exp])
}
