package raid

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// The actions of a teardown, in the order they run.
const (
	ActUnmount     Action = "umount"
	ActFstabRemove Action = "fstab-remove" // drop the mount point's lines from the fstab file
	ActStop        Action = "stop"         // mdadm --stop
	ActZero        Action = "zero"         // erase member superblocks (--wipe)
)

// TeardownSpec says which volume to take down.
type TeardownSpec struct {
	Striping Striping // StripingMD when empty
	Name     string   // md: the array is /dev/<Name>; btrfs: the filesystem label
	Mount    string
	// FstabFile loses its lines for Mount; "" leaves fstab alone.
	FstabFile string
	// Wipe erases the members' md superblocks (md) or btrfs signatures.
	Wipe bool
	// Members are the member devices to wipe when mdadm cannot list them
	// (the array is stopped) and, for btrfs, always.
	Members []string
	// Protected devices (the root device) are never stopped or wiped.
	Protected []string
}

func (s *TeardownSpec) normalize() error {
	if s.Striping == "" {
		s.Striping = StripingMD
	}
	if s.Name == "" {
		s.Name = "md0"
	}
	if !namePattern.MatchString(s.Name) {
		return fmt.Errorf("teardown: name %q: use letters, digits, '.', '_' and '-'", s.Name)
	}
	if s.Striping != StripingMD && s.Striping != StripingBtrfs {
		return fmt.Errorf("teardown: engine %q: want md or btrfs", s.Striping)
	}
	if !filepath.IsAbs(s.Mount) || filepath.Clean(s.Mount) == "/" {
		return fmt.Errorf("teardown: mount point %q: want an absolute path other than /", s.Mount)
	}
	s.Mount = filepath.Clean(s.Mount)
	for _, m := range s.Members {
		if slices.Contains(s.Protected, resolveDevice(m)) {
			return fmt.Errorf("teardown: %s holds the root filesystem; refusing", m)
		}
	}
	return nil
}

// TeardownSteps renders a teardown for a dry run; Teardown skips the steps
// it finds already done.
func TeardownSteps(spec TeardownSpec) ([]Step, error) {
	if err := spec.normalize(); err != nil {
		return nil, err
	}
	steps := []Step{{Action: ActUnmount, Cmd: []string{"umount", spec.Mount}}}
	if spec.FstabFile != "" {
		steps = append(steps, Step{Action: ActFstabRemove, Cmd: []string{"sed", "-i", "\\#^[^#]*[[:space:]]" + spec.Mount + "[[:space:]]#d", spec.FstabFile}, File: spec.FstabFile})
	}
	if spec.Striping == StripingMD {
		steps = append(steps, Step{Action: ActStop, Cmd: []string{"mdadm", "--stop", "/dev/" + spec.Name}})
	}
	if spec.Wipe && len(spec.Members) > 0 {
		steps = append(steps, Step{Action: ActZero, Cmd: zeroCmd(spec.Striping, spec.Members)})
	}
	return steps, nil
}

func zeroCmd(e Striping, members []string) []string {
	if e == StripingMD {
		return append([]string{"mdadm", "--zero-superblock"}, members...)
	}
	return append([]string{"wipefs", "-a"}, members...)
}

// Teardown unmounts the volume, removes its fstab lines, stops the md array
// and, with Wipe, erases the members' superblocks. Steps already done are
// skipped, so a second run changes nothing.
func Teardown(ctx context.Context, spec TeardownSpec, env Env) (*Result, error) {
	if err := spec.normalize(); err != nil {
		return nil, err
	}
	res := &Result{}
	report := func(s Step, changed bool, note string) {
		o := Outcome{Step: s, Changed: changed, Note: note}
		res.Outcomes = append(res.Outcomes, o)
		if env.Report != nil {
			env.Report(o)
		}
	}
	run := func(s Step) error {
		if _, err := env.Runner.Run(ctx, s.Cmd[0], s.Cmd[1:]...); err != nil {
			return fmt.Errorf("teardown: %w", err)
		}
		report(s, true, "")
		return nil
	}
	array := "/dev/" + spec.Name

	// Unmount.
	ms, err := ReadMountInfo(env.MountInfo)
	if err != nil {
		return res, fmt.Errorf("teardown: %w", err)
	}
	um := Step{Action: ActUnmount, Cmd: []string{"umount", spec.Mount}}
	if m, ok := mountAt(ms, spec.Mount); !ok {
		report(um, false, spec.Mount+" is not mounted")
	} else {
		src := resolveDevice(m.Source)
		switch {
		case slices.Contains(spec.Protected, src):
			return res, fmt.Errorf("teardown: %s is mounted from %s, the root device; refusing", spec.Mount, m.Source)
		case spec.Striping == StripingMD && src != resolveDevice(array):
			return res, fmt.Errorf("teardown: %s is mounted from %s, not %s; pass --name %s if that is the array",
				spec.Mount, m.Source, array, filepath.Base(m.Source))
		case spec.Striping == StripingBtrfs && m.FSType != "btrfs":
			return res, fmt.Errorf("teardown: %s holds %s, not btrfs", spec.Mount, m.FSType)
		}
		if err := run(um); err != nil {
			return res, err
		}
	}

	// Fstab.
	if spec.FstabFile != "" {
		s := Step{Action: ActFstabRemove, File: spec.FstabFile}
		removed, err := removeFstab(spec.FstabFile, spec.Mount)
		if err != nil {
			return res, fmt.Errorf("teardown: %w", err)
		}
		if len(removed) == 0 {
			report(s, false, "no line for "+spec.Mount)
		} else {
			s.Line = strings.Join(removed, "\n")
			report(s, true, "")
		}
	}

	// Stop the array.
	members := spec.Members
	if spec.Striping == StripingMD {
		stop := Step{Action: ActStop, Cmd: []string{"mdadm", "--stop", array}}
		listed, running, err := mdMembers(ctx, env.Runner, array)
		if err != nil {
			return res, fmt.Errorf("teardown: %w", err)
		}
		if !running {
			report(stop, false, array+" is not running")
		} else {
			for _, m := range listed {
				if slices.Contains(spec.Protected, resolveDevice(m)) {
					return res, fmt.Errorf("teardown: %s is a member of %s and holds the root filesystem; refusing", m, array)
				}
			}
			members = listed
			if err := run(stop); err != nil {
				return res, err
			}
		}
	}

	// Wipe.
	if !spec.Wipe {
		return res, nil
	}
	want := "linux_raid_member"
	if spec.Striping == StripingBtrfs {
		want = "btrfs"
	}
	var dirty []string
	for _, m := range members {
		typ, _, err := blkid(ctx, env.Runner, m)
		if err != nil {
			return res, fmt.Errorf("teardown: %w", err)
		}
		if typ == want {
			dirty = append(dirty, m)
		}
	}
	zero := Step{Action: ActZero, Cmd: zeroCmd(spec.Striping, dirty)}
	switch {
	case len(members) == 0:
		report(zero, false, "no members known; pass --devices to wipe them")
	case len(dirty) == 0:
		report(zero, false, "no "+want+" signature left on "+strings.Join(members, " "))
	default:
		if err := run(zero); err != nil {
			return res, err
		}
	}
	return res, nil
}
