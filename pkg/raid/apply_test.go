package raid

import (
	"context"
	"errors"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// mdPlan plans an md array over two clean fake instance-store drives,
// mounted under a temporary directory, with an fstab in it.
func mdPlan(t *testing.T, owner string) (*Plan, string) {
	t.Helper()
	dir := t.TempDir()
	p, err := NewPlan(Spec{
		Devices: []string{"/dev/nvme1n1", "/dev/nvme2n1"}, Mount: filepath.Join(dir, "striped"),
		Owner: owner, Fstab: true, FstabFile: filepath.Join(dir, "fstab"),
	}, inventory(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p.Spec.FstabFile, []byte("# static file system information\nLABEL=root / ext4 defaults 0 1"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p, dir
}

// otherUser is a user that does not own the test's temporary directories.
func otherUser(t *testing.T) string {
	if currentUser(t) == "nobody" {
		return "root"
	}
	return "nobody"
}

func currentUser(t *testing.T) string {
	u, err := user.Current()
	if err != nil {
		t.Skipf("no current user: %v", err)
	}
	return u.Username
}

func TestApplyMDThenAgainChangesNothing(t *testing.T) {
	other := otherUser(t)
	p, _ := mdPlan(t, other)
	mnt := p.Spec.Mount
	m := newFakeMachine(t)
	res, err := Apply(context.Background(), p, m.env())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"mdadm --detail --export /dev/md0",
		"mdadm --create /dev/md0 --level=0 --raid-devices=2 --chunk=512 --run /dev/nvme1n1 /dev/nvme2n1",
		"mkfs.xfs -d su=512k,sw=2 /dev/md0",
		"blkid -p -o export /dev/md0",
		"mkdir -p " + mnt,
		"mount -o noatime /dev/md0 " + mnt,
		"chown " + other + ": " + mnt,
	}
	if !slices.Equal(m.calls, want) {
		t.Errorf("got commands\n  %s\nwant\n  %s", strings.Join(m.calls, "\n  "), strings.Join(want, "\n  "))
	}
	if res.UUID != "0000-uuid-1" || !res.Changed() {
		t.Errorf("got uuid %q changed %v, want 0000-uuid-1 and changes", res.UUID, res.Changed())
	}
	fstab, err := os.ReadFile(p.Spec.FstabFile)
	if err != nil {
		t.Fatal(err)
	}
	wantFstab := "# static file system information\nLABEL=root / ext4 defaults 0 1\nUUID=0000-uuid-1 " + mnt + " xfs defaults,noatime,nofail 0 0\n"
	if string(fstab) != wantFstab {
		t.Errorf("got fstab %q, want %q", fstab, wantFstab)
	}

	// The chown did not really happen (fake), so plan the second run for
	// the owner the directory already has.
	p2, err := NewPlan(Spec{Devices: p.Spec.Devices, Mount: mnt, Owner: currentUser(t), Fstab: true, FstabFile: p.Spec.FstabFile}, inventory(t))
	if err != nil {
		t.Fatal(err)
	}
	m.calls = nil
	res, err = Apply(context.Background(), p2, m.env())
	if err != nil {
		t.Fatal(err)
	}
	if got := m.changes(); len(got) != 0 || res.Changed() {
		t.Errorf("second run: got changes %q (changed %v), want none", got, res.Changed())
	}
	if len(res.Outcomes) != 6 {
		t.Errorf("second run: got %d outcomes, want 6 (create, mkfs, mkdir, mount, chown, fstab)", len(res.Outcomes))
	}
	again, _ := os.ReadFile(p.Spec.FstabFile)
	if string(again) != wantFstab {
		t.Errorf("second run changed fstab to %q", again)
	}
}

func TestApplyFailureAtEachStep(t *testing.T) {
	stopZero := []string{"mdadm --stop /dev/md0", "mdadm --zero-superblock /dev/nvme1n1 /dev/nvme2n1"}
	tests := []struct {
		failOn    string
		failAfter bool
		changed   int // lines starting "changed:"
		notDone   string
		undo      func(mnt string) []string
	}{
		{"mdadm --create", false, 0, "mkfs, mkdir, mount, chown, fstab", func(string) []string { return nil }},
		{"mdadm --create", true, 1, "mkfs, mkdir, mount, chown, fstab", func(string) []string { return stopZero }},
		{"mkfs.xfs", false, 2, "mkdir, mount, chown, fstab", func(string) []string { return append([]string{"wipefs -a /dev/md0"}, stopZero...) }},
		{"mkdir", false, 2, "mount, chown, fstab", func(string) []string { return append([]string{"wipefs -a /dev/md0"}, stopZero...) }},
		{"mount", false, 3, "chown, fstab", func(mnt string) []string {
			return append([]string{"rmdir " + mnt, "wipefs -a /dev/md0"}, stopZero...)
		}},
		{"chown", false, 4, "fstab", func(mnt string) []string {
			return append([]string{"umount " + mnt, "rmdir " + mnt, "wipefs -a /dev/md0"}, stopZero...)
		}},
	}
	for _, tt := range tests {
		name := tt.failOn
		if tt.failAfter {
			name += " after the work"
		}
		t.Run(name, func(t *testing.T) {
			p, _ := mdPlan(t, otherUser(t))
			m := newFakeMachine(t)
			m.failOn, m.failAfter = tt.failOn, tt.failAfter
			_, err := Apply(context.Background(), p, m.env())
			var pe *PartialError
			if !errors.As(err, &pe) {
				t.Fatalf("got %v, want a *PartialError", err)
			}
			if got, want := pe.Undo, tt.undo(p.Spec.Mount); !slices.Equal(got, want) {
				t.Errorf("undo: got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
			}
			msg := err.Error()
			if got := strings.Count(msg, "  changed: "); got != tt.changed {
				t.Errorf("got %d changed lines, want %d:\n%s", got, tt.changed, msg)
			}
			if !strings.Contains(msg, "not done: "+tt.notDone) || !strings.Contains(msg, "simulated failure") {
				t.Errorf("got message\n%s\nwant it to list what was not done (%s) and the cause", msg, tt.notDone)
			}
			if tt.changed == 0 && !strings.Contains(msg, "nothing was changed by this run") {
				t.Errorf("got message\n%s\nwant it to say nothing was changed", msg)
			}
			if fstab, _ := os.ReadFile(p.Spec.FstabFile); strings.Contains(string(fstab), "UUID=") {
				t.Errorf("fstab got a line although the run failed: %q", fstab)
			}
		})
	}
}

func TestApplyFstabFailure(t *testing.T) {
	p, dir := mdPlan(t, "")
	p.Spec.FstabFile = filepath.Join(dir, "missing-dir", "fstab")
	m := newFakeMachine(t)
	_, err := Apply(context.Background(), p, m.env())
	var pe *PartialError
	if !errors.As(err, &pe) || pe.Step.Action != ActFstab {
		t.Fatalf("got %v, want a *PartialError at the fstab step", err)
	}
	if len(pe.Undo) == 0 || pe.Undo[0] != "umount "+p.Spec.Mount {
		t.Errorf("got undo %q, want it to start with umount", pe.Undo)
	}
}

func TestApplyRefusesConflictsWithoutChanges(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, m *fakeMachine, p *Plan)
		want  string
	}{
		{"array with other members", func(t *testing.T, m *fakeMachine, p *Plan) {
			m.arrays["/dev/md0"] = []string{"/dev/nvme1n1", "/dev/nvme9n1"}
		}, "already exists with members /dev/nvme1n1 /dev/nvme9n1"},
		{"array with another filesystem", func(t *testing.T, m *fakeMachine, p *Plan) {
			m.arrays["/dev/md0"] = []string{"/dev/nvme1n1", "/dev/nvme2n1"}
			m.fs["/dev/md0"] = [2]string{"ext4", "u"}
		}, "holds ext4, not xfs"},
		{"something else mounted there", func(t *testing.T, m *fakeMachine, p *Plan) {
			appendLine(t, m.mountinfo, "50 27 0:50 / "+p.Spec.Mount+" rw - tmpfs tmpfs rw\n")
		}, "tmpfs is already mounted at"},
		{"array mounted elsewhere", func(t *testing.T, m *fakeMachine, p *Plan) {
			m.arrays["/dev/md0"] = []string{"/dev/nvme1n1", "/dev/nvme2n1"}
			m.fs["/dev/md0"] = [2]string{"xfs", "u"}
			appendLine(t, m.mountinfo, "50 27 9:0 / /elsewhere rw - xfs /dev/md0 rw\n")
		}, "/dev/md0 is already mounted at /elsewhere"},
		{"fstab has another line", func(t *testing.T, m *fakeMachine, p *Plan) {
			appendLine(t, p.Spec.FstabFile, "\n/dev/sdb "+p.Spec.Mount+" ext4 defaults 0 0\n")
		}, "already has a line for"},
		{"mount point is a file", func(t *testing.T, m *fakeMachine, p *Plan) {
			if err := os.WriteFile(p.Spec.Mount, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "is not a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _ := mdPlan(t, "")
			m := newFakeMachine(t)
			tt.setup(t, m, p)
			_, err := Apply(context.Background(), p, m.env())
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "nothing was changed") {
				t.Errorf("got %v, want an error containing %q and saying nothing was changed", err, tt.want)
			}
			if got := m.changes(); len(got) != 0 {
				t.Errorf("got changes %q, want none", got)
			}
		})
	}
}

func appendLine(t *testing.T, file, line string) {
	t.Helper()
	f, err := os.OpenFile(file, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(line); err != nil {
		t.Fatal(err)
	}
}

func TestTeardownMD(t *testing.T) {
	p, _ := mdPlan(t, "")
	m := newFakeMachine(t)
	if _, err := Apply(context.Background(), p, m.env()); err != nil {
		t.Fatal(err)
	}
	spec := TeardownSpec{Mount: p.Spec.Mount, FstabFile: p.Spec.FstabFile, Wipe: true}
	steps, err := TeardownSteps(spec)
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 3 || steps[0].String() != "umount "+p.Spec.Mount || steps[2].String() != "mdadm --stop /dev/md0" {
		t.Errorf("got teardown steps %v", steps)
	}
	m.calls = nil
	res, err := Teardown(context.Background(), spec, m.env())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"umount " + p.Spec.Mount,
		"mdadm --detail --export /dev/md0",
		"mdadm --stop /dev/md0",
		"blkid -p -o export /dev/nvme1n1",
		"blkid -p -o export /dev/nvme2n1",
		"mdadm --zero-superblock /dev/nvme1n1 /dev/nvme2n1",
	}
	if !slices.Equal(m.calls, want) {
		t.Errorf("got commands\n  %s\nwant\n  %s", strings.Join(m.calls, "\n  "), strings.Join(want, "\n  "))
	}
	fstab, _ := os.ReadFile(p.Spec.FstabFile)
	if strings.Contains(string(fstab), p.Spec.Mount) || !strings.Contains(string(fstab), "LABEL=root / ext4") {
		t.Errorf("got fstab %q, want the volume's line gone and the rest kept", fstab)
	}
	if !res.Changed() {
		t.Error("got no changes from the first teardown")
	}
	// Again: nothing is mounted, the array is stopped, and the members
	// must be named to be wiped.
	m.calls = nil
	spec.Members = []string{"/dev/nvme1n1", "/dev/nvme2n1"}
	res, err = Teardown(context.Background(), spec, m.env())
	if err != nil {
		t.Fatal(err)
	}
	if got := m.changes(); len(got) != 0 || res.Changed() {
		t.Errorf("second teardown: got changes %q, want none", got)
	}
}

func TestTeardownRefuses(t *testing.T) {
	m := newFakeMachine(t)
	appendLine(t, m.mountinfo, "50 27 9:1 / /striped rw - xfs /dev/md127 rw\n")
	_, err := Teardown(context.Background(), TeardownSpec{Mount: "/striped"}, m.env())
	if err == nil || !strings.Contains(err.Error(), "pass --name md127") {
		t.Errorf("got %v, want a hint to pass --name md127", err)
	}
	_, err = Teardown(context.Background(), TeardownSpec{Mount: "/"}, m.env())
	if err == nil {
		t.Error("teardown of /: got no error")
	}
	_, err = Teardown(context.Background(), TeardownSpec{Mount: "/s", Wipe: true, Members: []string{"/dev/nvme0n1"}, Protected: []string{"/dev/nvme0n1"}}, m.env())
	if err == nil || !strings.Contains(err.Error(), "root") {
		t.Errorf("wipe of the root device: got %v, want a refusal", err)
	}
	if len(m.changes()) != 0 {
		t.Errorf("got changes %q, want none", m.changes())
	}
}

func TestCheckTools(t *testing.T) {
	p, _ := mdPlan(t, "x")
	if got, want := p.Tools(), []string{"blkid", "mdadm", "mkfs.xfs", "mkdir", "mount", "chown"}; !slices.Equal(got, want) {
		t.Errorf("got tools %v, want %v", got, want)
	}
	missing := func(name string) (string, error) {
		if name == "mdadm" || name == "mkfs.xfs" {
			return "", errors.New("not found")
		}
		return "/usr/bin/" + name, nil
	}
	err := CheckTools(p.Tools(), missing)
	if err == nil {
		t.Fatal("got no error")
	}
	for _, want := range []string{"mdadm is not installed: apt-get install mdadm (Debian, Ubuntu) or dnf install mdadm (Amazon Linux)",
		"mkfs.xfs is not installed: apt-get install xfsprogs"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("got %q, want it to contain %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "blkid") {
		t.Errorf("got %q, want only the missing tools", err)
	}
	if !strings.Contains(InstallHint("mkfs.btrfs"), "Amazon Linux 2023 does not package it") {
		t.Errorf("got %q for mkfs.btrfs", InstallHint("mkfs.btrfs"))
	}
}
