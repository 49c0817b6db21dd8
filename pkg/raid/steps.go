package raid

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Action names one kind of step.
type Action string

// The actions a plan is made of, in the order they run.
const (
	ActWipe   Action = "wipe"   // erase old signatures on forced members
	ActCreate Action = "create" // mdadm --create
	ActMkfs   Action = "mkfs"
	ActScan   Action = "scan" // btrfs device scan, so the kernel knows every member
	ActMkdir  Action = "mkdir"
	ActMount  Action = "mount"
	ActChown  Action = "chown"
	ActFstab  Action = "fstab" // append a line to the fstab file
)

// Step is one command of a plan. Fstab steps have no Cmd: the line is
// appended by Apply itself and rendered as an echo.
type Step struct {
	Action Action   `json:"action"`
	Cmd    []string `json:"cmd,omitempty"`
	Line   string   `json:"fstab_line,omitempty"` // fstab steps: the line, with UUID=<uuid> until known
	File   string   `json:"fstab_file,omitempty"`
	UUIDOf string   `json:"uuid_of,omitempty"` // fstab steps: the device whose filesystem UUID goes in Line
}

// String renders the step as a shell command a person could paste.
func (s Step) String() string {
	if s.Action == ActFstab {
		line := strings.Replace(s.Line, "UUID="+uuidPlaceholder, "UUID=$(blkid -s UUID -o value "+s.UUIDOf+")", 1)
		return fmt.Sprintf("echo %q >> %s", line, shellQuote(s.File))
	}
	return shellJoin(s.Cmd)
}

const uuidPlaceholder = "<uuid>"

// Steps returns every step of the plan, whether or not Apply will find it
// already done.
func (p *Plan) Steps() []Step {
	s := p.Spec
	var out []Step
	paths := p.memberPaths()
	if len(p.Wipe) > 0 {
		out = append(out, Step{Action: ActWipe, Cmd: append([]string{"wipefs", "-a"}, p.Wipe...)})
	}
	switch s.Striping {
	case StripingMD:
		out = append(out,
			Step{Action: ActCreate, Cmd: append([]string{"mdadm", "--create", p.Target, "--level=0",
				"--raid-devices=" + strconv.Itoa(len(paths)), "--chunk=" + strconv.FormatInt(s.Chunk>>10, 10), "--run"}, paths...)},
			Step{Action: ActMkfs, Cmd: p.mkfsCmd()})
	case StripingBtrfs:
		out = append(out,
			Step{Action: ActMkfs, Cmd: p.mkfsCmd()},
			Step{Action: ActScan, Cmd: append([]string{"btrfs", "device", "scan"}, paths...)})
	}
	out = append(out,
		Step{Action: ActMkdir, Cmd: []string{"mkdir", "-p", s.Mount}},
		Step{Action: ActMount, Cmd: []string{"mount", "-o", "noatime", p.Target, s.Mount}})
	if s.Owner != "" {
		out = append(out, Step{Action: ActChown, Cmd: []string{"chown", ownerArg(s.Owner), s.Mount}})
	}
	if s.Fstab {
		out = append(out, Step{Action: ActFstab, UUIDOf: p.Target, Line: p.FstabLine(uuidPlaceholder), File: s.FstabFile})
	}
	return out
}

// mkfsCmd builds the mkfs command with the stripe alignment.
func (p *Plan) mkfsCmd() []string {
	n := len(p.Members)
	s := p.Spec
	switch s.FS {
	case "xfs":
		c := []string{"mkfs.xfs"}
		if s.Force {
			c = append(c, "-f")
		}
		return append(c, "-d", fmt.Sprintf("su=%dk,sw=%d", s.Chunk>>10, n), p.Target)
	case "ext4":
		stride := s.Chunk / 4096
		c := []string{"mkfs.ext4"}
		if s.Force {
			c = append(c, "-F")
		}
		return append(c, "-b", "4096", "-E", fmt.Sprintf("stride=%d,stripe_width=%d", stride, stride*int64(n)), p.Target)
	default: // btrfs
		return append([]string{"mkfs.btrfs", "-d", "raid0", "-m", "raid1", "-L", s.Name}, p.memberPaths()...)
	}
}

// FstabLine is the fstab entry for the volume with the given filesystem UUID.
func (p *Plan) FstabLine(uuid string) string {
	pass := "0"
	if p.Spec.FS == "ext4" {
		pass = "2"
	}
	return fmt.Sprintf("UUID=%s %s %s defaults,noatime,nofail 0 %s", uuid, p.Spec.Mount, p.Spec.FS, pass)
}

func (p *Plan) memberPaths() []string {
	out := make([]string, len(p.Members))
	for i, d := range p.Members {
		out[i] = d.Path
	}
	return out
}

// ownerArg turns "user" into "user:" (chown then uses the login group).
func ownerArg(owner string) string {
	if strings.Contains(owner, ":") {
		return owner
	}
	return owner + ":"
}

var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./-]+$`)

func shellQuote(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = shellQuote(a)
	}
	return strings.Join(q, " ")
}
