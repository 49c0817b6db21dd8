package raid

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
)

// fakeMachine is a hand-written Runner that keeps just enough state (md
// arrays, filesystems, md superblocks, mounts in a mountinfo file) to answer
// the probes Apply and Teardown make, and records every command.
type fakeMachine struct {
	t         *testing.T
	mountinfo string
	arrays    map[string][]string  // array -> members
	fs        map[string][2]string // device -> type, uuid
	sb        map[string]bool      // devices with an md superblock
	calls     []string
	// failOn makes the first command starting with this prefix fail.
	failOn string
	// failAfter makes the failing command do its work first.
	failAfter bool
	uuids     int
}

func newFakeMachine(t *testing.T) *fakeMachine {
	t.Helper()
	mi := t.TempDir() + "/mountinfo"
	if err := os.WriteFile(mi, []byte("27 1 259:1 / / rw - xfs /dev/nvme0n1p1 rw\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return &fakeMachine{t: t, mountinfo: mi, arrays: map[string][]string{}, fs: map[string][2]string{}, sb: map[string]bool{}}
}

func (m *fakeMachine) Run(_ context.Context, name string, args ...string) ([]byte, error) {
	cmd := strings.Join(append([]string{name}, args...), " ")
	m.calls = append(m.calls, cmd)
	fail := m.failOn != "" && strings.HasPrefix(cmd, m.failOn)
	if fail {
		m.failOn = ""
		if !m.failAfter {
			return nil, &CommandError{Cmd: append([]string{name}, args...), ExitCode: 1, Stderr: "simulated failure", Err: errors.New("exit status 1")}
		}
	}
	out, err := m.do(name, args)
	if fail && err == nil {
		err = &CommandError{Cmd: append([]string{name}, args...), ExitCode: 1, Stderr: "simulated failure after the work", Err: errors.New("exit status 1")}
	}
	return out, err
}

func (m *fakeMachine) do(name string, args []string) ([]byte, error) {
	last := args[len(args)-1]
	notFound := func(code int) error {
		return &CommandError{Cmd: append([]string{name}, args...), ExitCode: code, Err: fmt.Errorf("exit status %d", code)}
	}
	switch {
	case name == "mdadm" && args[0] == "--detail":
		ms, ok := m.arrays[last]
		if !ok {
			return nil, notFound(1)
		}
		var b strings.Builder
		fmt.Fprintf(&b, "MD_LEVEL=raid0\nMD_DEVICES=%d\n", len(ms))
		for i, d := range ms {
			k := strings.ReplaceAll(strings.TrimPrefix(d, "/"), "/", "_")
			fmt.Fprintf(&b, "MD_DEVICE_%s_ROLE=%d\nMD_DEVICE_%s_DEV=%s\n", k, i, k, d)
		}
		return []byte(b.String()), nil
	case name == "mdadm" && args[0] == "--create":
		members := args[6:]
		m.arrays[args[1]] = members
		for _, d := range members {
			m.sb[d] = true
		}
	case name == "mdadm" && args[0] == "--stop":
		delete(m.arrays, last)
		delete(m.fs, last)
	case name == "mdadm" && args[0] == "--zero-superblock":
		for _, d := range args[1:] {
			delete(m.sb, d)
		}
	case name == "blkid":
		if f, ok := m.fs[last]; ok {
			return []byte(fmt.Sprintf("DEVNAME=%s\nUUID=%s\nTYPE=%s\n", last, f[1], f[0])), nil
		}
		if m.sb[last] {
			return []byte("TYPE=linux_raid_member\n"), nil
		}
		return nil, notFound(2)
	case strings.HasPrefix(name, "mkfs."):
		m.uuids++
		m.fs[last] = [2]string{strings.TrimPrefix(name, "mkfs."), fmt.Sprintf("0000-uuid-%d", m.uuids)}
	case name == "wipefs":
		for _, d := range args[1:] {
			delete(m.fs, d)
			delete(m.sb, d)
		}
	case name == "mkdir":
		return nil, os.MkdirAll(last, 0o755)
	case name == "mount":
		src := args[len(args)-2]
		line := fmt.Sprintf("99 27 9:0 / %s rw - %s %s rw\n", last, m.fs[src][0], src)
		f, err := os.OpenFile(m.mountinfo, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		_, err = f.WriteString(line)
		return nil, err
	case name == "umount":
		b, err := os.ReadFile(m.mountinfo)
		if err != nil {
			return nil, err
		}
		var kept []string
		for _, l := range strings.SplitAfter(string(b), "\n") {
			if f := strings.Fields(l); len(f) > 4 && f[4] == last {
				continue
			}
			kept = append(kept, l)
		}
		return nil, os.WriteFile(m.mountinfo, []byte(strings.Join(kept, "")), 0o600)
	case name == "chown", name == "btrfs":
	default:
		m.t.Errorf("fake machine: unexpected command %s %s", name, strings.Join(args, " "))
	}
	return nil, nil
}

// changes returns the recorded commands that are not probes.
func (m *fakeMachine) changes() []string {
	var out []string
	for _, c := range m.calls {
		if !strings.HasPrefix(c, "mdadm --detail") && !strings.HasPrefix(c, "blkid") {
			out = append(out, c)
		}
	}
	return out
}

func (m *fakeMachine) env() Env { return Env{Runner: m, MountInfo: m.mountinfo} }
