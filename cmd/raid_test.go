package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/s3pd/s3pd/internal/testenv"
	"github.com/s3pd/s3pd/pkg/raid"
)

// raidRunner is a hand-written raid.Runner: it records commands, answers
// the probes as on a machine with no array and no filesystem, and fails the
// first command starting with failOn.
type raidRunner struct {
	calls  []string
	failOn string
}

func (r *raidRunner) Run(_ context.Context, name string, args ...string) ([]byte, error) {
	cmd := strings.Join(append([]string{name}, args...), " ")
	r.calls = append(r.calls, cmd)
	fail := func(code int, msg string) error {
		return &raid.CommandError{Cmd: append([]string{name}, args...), ExitCode: code, Stderr: msg, Err: fmt.Errorf("exit status %d", code)}
	}
	switch {
	case r.failOn != "" && strings.HasPrefix(cmd, r.failOn):
		return nil, fail(1, "simulated failure")
	case strings.HasPrefix(cmd, "mdadm --detail"):
		return nil, fail(1, "cannot open "+args[len(args)-1])
	case name == "blkid" && strings.Contains(cmd, "/dev/md0") && len(r.calls) > 2:
		return []byte("TYPE=xfs\nUUID=1234-abcd\n"), nil
	case name == "blkid":
		return nil, fail(2, "")
	}
	return nil, nil
}

// raidFixture is a command over the fake /sys tree in pkg/raid/testdata.
type raidFixture struct {
	f        *Factory
	out, err *bytes.Buffer
	runner   *raidRunner
	deps     raidDeps
	dir      string
}

func newRaidFixture(t *testing.T) *raidFixture {
	t.Helper()
	dir := t.TempDir()
	dev := filepath.Join(dir, "dev")
	if err := os.Mkdir(dev, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"md5", "nvme0n1", "nvme1n1", "nvme2n1", "nvme4n1", "nvme5n1", "nvme6n1", "nvme7n1"} {
		if err := os.WriteFile(filepath.Join(dev, n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dev, "nvme3n1"), []byte("XFSB"), 0o600); err != nil {
		t.Fatal(err)
	}
	fx := &raidFixture{out: &bytes.Buffer{}, err: &bytes.Buffer{}, runner: &raidRunner{}, dir: dir}
	fx.f = &Factory{IO: &IOStreams{In: strings.NewReader(""), Out: fx.out, ErrOut: fx.err}, Getenv: func(string) string { return "" }}
	fx.deps = raidDeps{
		system:   raid.System{SysRoot: "../pkg/raid/testdata/sys", DevRoot: dev, MountInfo: "../pkg/raid/testdata/mountinfo"},
		runner:   fx.runner,
		geteuid:  func() int { return 0 },
		lookPath: func(name string) (string, error) { return "/usr/sbin/" + name, nil },
	}
	return fx
}

func (fx *raidFixture) run(args ...string) error {
	c := newCmdRaidSetup(fx.f, fx.deps)
	c.SetArgs(args)
	c.SetOut(fx.out)
	c.SetErr(fx.err)
	c.SilenceUsage, c.SilenceErrors = true, true
	return c.Execute()
}

func TestRaidList(t *testing.T) {
	fx := newRaidFixture(t)
	if err := fx.run("--list"); err != nil {
		t.Fatal(err)
	}
	out := fx.out.String()
	for _, want := range []string{
		"DEVICE", "/dev/nvme1n1  1.7 TiB", "instance-store  Amazon EC2 NVMe Instance Storage  yes",
		"/dev/nvme0n1", "holds the root filesystem; mounted at /; partitioned (nvme0n1p1, nvme0n1p128)",
		"holds data (xfs signature)", "member of md5", "mounted at /data",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("got\n%s\nwant it to contain %q", out, want)
		}
	}
	if strings.Contains(out, "zram0") || strings.Contains(out, "loop0") {
		t.Errorf("got\n%s\nwant no zram0 and no empty loop0", out)
	}

	fx = newRaidFixture(t)
	if err := fx.run("--list", "--json"); err != nil {
		t.Fatal(err)
	}
	var devs []raid.Device
	if err := json.Unmarshal(fx.out.Bytes(), &devs); err != nil {
		t.Fatalf("--json: %v: %s", err, fx.out)
	}
	if len(devs) != 9 || devs[1].Name != "nvme0n1" || !devs[1].Root || devs[1].Usable || !devs[2].Usable {
		t.Errorf("--json: got %+v", devs)
	}
}

func TestRaidDryRunPrintsThePlanWithoutRoot(t *testing.T) {
	fx := newRaidFixture(t)
	fx.deps.geteuid = func() int { return 1000 }
	err := fx.run("--all-instance-store", "--mount", "/striped", "--owner", "ec2-user", "--fstab", "--dry-run")
	if err != nil {
		t.Fatal(err)
	}
	want := `plan:
  mdadm --create /dev/md0 --level=0 --raid-devices=2 --chunk=512 --run /dev/nvme1n1 /dev/nvme2n1
  mkfs.xfs -d su=512k,sw=2 /dev/md0
  mkdir -p /striped
  mount -o noatime /dev/md0 /striped
  chown ec2-user: /striped
  echo "UUID=$(blkid -s UUID -o value /dev/md0) /striped xfs defaults,noatime,nofail 0 0" >> /etc/fstab
parts: 8 MiB fill whole stripes of 1 MiB (512 KiB x 2 devices); download onto it with:
  s3pd get --partsize 8MiB --direct-io auto s3://BUCKET/PREFIX/ /striped/
`
	if got := fx.out.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	for _, skipped := range []string{"skipping /dev/nvme3n1: holds data (xfs signature)", "skipping /dev/nvme7n1: partitioned"} {
		if !strings.Contains(fx.err.String(), skipped) {
			t.Errorf("got stderr %q, want %q", fx.err, skipped)
		}
	}
	if len(fx.runner.calls) != 0 {
		t.Errorf("dry run ran %q", fx.runner.calls)
	}
}

func TestRaidDryRunJSON(t *testing.T) {
	fx := newRaidFixture(t)
	if err := fx.run("--devices", "/dev/nvme1n1,/dev/nvme6n1", "--mount", "/s", "--fs", "ext4", "--chunk", "256K", "--dry-run", "--json"); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Commands    []string
		Warnings    []string
		Target      string
		StripeBytes int64  `json:"stripe_bytes"`
		PartSize    int64  `json:"part_size"`
		Get         string `json:"get"`
	}
	if err := json.Unmarshal(fx.out.Bytes(), &got); err != nil {
		t.Fatalf("%v: %s", err, fx.out)
	}
	if got.StripeBytes != 512<<10 || got.PartSize != 8<<20 || got.Get != "s3pd get --partsize 8MiB --direct-io auto s3://BUCKET/PREFIX/ /s/" {
		t.Errorf("stripe %d, part size %d, get %q; want 512 KiB, 8 MiB and the get line", got.StripeBytes, got.PartSize, got.Get)
	}
	if got.Target != "/dev/md0" || len(got.Commands) != 4 || got.Commands[1] != "mkfs.ext4 -b 4096 -E stride=64,stripe_width=128 /dev/md0" {
		t.Errorf("got %+v", got)
	}
	if len(got.Warnings) != 2 || !strings.Contains(fx.err.String(), "warning: devices differ in size") {
		t.Errorf("got warnings %q and stderr %q, want size and mix warnings", got.Warnings, fx.err)
	}
}

func TestRaidApplyWithYes(t *testing.T) {
	fx := newRaidFixture(t)
	mnt := filepath.Join(fx.dir, "striped")
	fstab := filepath.Join(fx.dir, "fstab")
	err := fx.run("--devices", "nvme1n1,nvme2n1", "--mount", mnt, "--fstab", "--fstab-file", fstab, "--yes")
	if err != nil {
		t.Fatalf("%v\nstderr: %s", err, fx.err)
	}
	want := []string{
		"mdadm --detail --export /dev/md0",
		"mdadm --create /dev/md0 --level=0 --raid-devices=2 --chunk=512 --run /dev/nvme1n1 /dev/nvme2n1",
		"mkfs.xfs -d su=512k,sw=2 /dev/md0",
		"blkid -p -o export /dev/md0",
		"mkdir -p " + mnt,
		"mount -o noatime /dev/md0 " + mnt,
	}
	if got := fx.runner.calls; strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got commands\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	if b, _ := os.ReadFile(fstab); string(b) != "UUID=1234-abcd "+mnt+" xfs defaults,noatime,nofail 0 0\n" {
		t.Errorf("got fstab %q", b)
	}
	if !strings.Contains(fx.out.String(), "ready: /dev/md0 (xfs over 2 devices, UUID 1234-abcd) mounted at "+mnt) {
		t.Errorf("got stdout %q", fx.out)
	}
	if !strings.Contains(fx.out.String(), "s3pd get --partsize 8MiB --direct-io auto s3://BUCKET/PREFIX/ "+mnt+"/") {
		t.Errorf("got stdout %q, want the get line for the stripe", fx.out)
	}
	if !strings.Contains(fx.err.String(), "done: mkfs.xfs -d su=512k,sw=2 /dev/md0") {
		t.Errorf("got stderr %q, want a line per step", fx.err)
	}
}

func TestRaidRefusals(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		tty      string // answer on a terminal; "" for no terminal
		euid     int
		missing  string
		wantCode int
		want     string
	}{
		{"no --yes, no terminal", []string{"--devices", "nvme1n1,nvme2n1", "--mount", "/s"}, "", 0, "", ExitUsage, "without --yes"},
		{"terminal says no", []string{"--devices", "nvme1n1,nvme2n1", "--mount", "/s"}, "n\n", 0, "", ExitFailed, "aborted; nothing was changed"},
		{"not root", []string{"--devices", "nvme1n1,nvme2n1", "--mount", "/s", "--yes"}, "", 1000, "", ExitFailed, "must run as root"},
		{"mdadm missing", []string{"--devices", "nvme1n1,nvme2n1", "--mount", "/s", "--yes"}, "", 0, "mdadm", ExitFailed, "apt-get install mdadm (Debian, Ubuntu) or dnf install mdadm (Amazon Linux)"},
		{"mkfs.xfs missing", []string{"--devices", "nvme1n1,nvme2n1", "--mount", "/s", "--yes"}, "", 0, "mkfs.xfs", ExitFailed, "apt-get install xfsprogs"},
		{"root device with --force", []string{"--devices", "nvme0n1,nvme1n1", "--mount", "/s", "--yes", "--force"}, "", 0, "", ExitUsage, "holds the root filesystem"},
		{"data without --force", []string{"--devices", "nvme3n1,nvme1n1", "--mount", "/s", "--yes"}, "", 0, "", ExitUsage, "pass --force"},
		{"no devices", []string{"--mount", "/s"}, "", 0, "", ExitUsage, "choose the devices"},
		{"no mount", []string{"--devices", "nvme1n1,nvme2n1"}, "", 0, "", ExitUsage, "--mount is required"},
		{"yes and dry-run", []string{"--devices", "nvme1n1,nvme2n1", "--mount", "/s", "--yes", "--dry-run"}, "", 0, "", ExitUsage, "contradict"},
		{"wipe without teardown", []string{"--devices", "nvme1n1,nvme2n1", "--mount", "/s", "--wipe"}, "", 0, "", ExitUsage, "--teardown only"},
		{"bad chunk", []string{"--devices", "nvme1n1,nvme2n1", "--mount", "/s", "--chunk", "lots"}, "", 0, "", ExitUsage, "--chunk"},
		{"no EBS left", []string{"--all-ebs", "--mount", "/s", "--name", "md5", "--dry-run"}, "", 0, "", ExitUsage, "only 1 of 2 devices belong to md5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newRaidFixture(t)
			fx.deps.geteuid = func() int { return tt.euid }
			if tt.tty != "" {
				fx.f.IO.InTTY, fx.f.IO.In = true, strings.NewReader(tt.tty)
			}
			fx.deps.lookPath = func(name string) (string, error) {
				if name == tt.missing {
					return "", errors.New("not found")
				}
				return "/usr/sbin/" + name, nil
			}
			err := fx.run(tt.args...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
			if got := exitCode(err); got != tt.wantCode {
				t.Errorf("got exit code %d, want %d", got, tt.wantCode)
			}
			if len(fx.runner.calls) != 0 {
				t.Errorf("got commands %q, want none", fx.runner.calls)
			}
		})
	}
}

func TestRaidConfirmYesOnTerminal(t *testing.T) {
	fx := newRaidFixture(t)
	fx.f.IO.InTTY, fx.f.IO.In = true, strings.NewReader("y\n")
	if err := fx.run("--devices", "nvme1n1,nvme2n1", "--mount", filepath.Join(fx.dir, "s")); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(fx.err.String(), "This erases all data on /dev/nvme1n1 /dev/nvme2n1. Run these commands? [y/N]") {
		t.Errorf("got stderr %q, want the question", fx.err)
	}
	if len(fx.runner.calls) < 3 {
		t.Errorf("got commands %q, want the plan run", fx.runner.calls)
	}
}

func TestRaidPartialFailureReport(t *testing.T) {
	fx := newRaidFixture(t)
	fx.runner.failOn = "mkfs.xfs"
	err := fx.run("--devices", "nvme1n1,nvme2n1", "--mount", filepath.Join(fx.dir, "s"), "--yes")
	if err == nil || !strings.Contains(err.Error(), "stopped at step mkfs") {
		t.Fatalf("got %v, want a stop at mkfs", err)
	}
	for _, want := range []string{
		"state of the machine:\n  changed: created array /dev/md0 (raid0 over /dev/nvme1n1 /dev/nvme2n1); it is running",
		"not done: mkdir, mount",
		"to undo, run:\n  wipefs -a /dev/md0\n  mdadm --stop /dev/md0\n  mdadm --zero-superblock /dev/nvme1n1 /dev/nvme2n1",
		"s3pd raid-setup --teardown --engine md --name md0 --mount " + filepath.Join(fx.dir, "s") + " --wipe --devices /dev/nvme1n1,/dev/nvme2n1 --yes",
	} {
		if !strings.Contains(fx.err.String(), want) {
			t.Errorf("got stderr\n%s\nwant it to contain\n%s", fx.err, want)
		}
	}
}

func TestRaidTeardownDryRun(t *testing.T) {
	fx := newRaidFixture(t)
	if err := fx.run("--teardown", "--mount", "/striped", "--name", "md5", "--wipe", "--dry-run"); err != nil {
		t.Fatal(err)
	}
	want := "plan:\n  umount /striped\n  sed -i '\\#^[^#]*[[:space:]]/striped[[:space:]]#d' /etc/fstab\n  mdadm --stop /dev/md5\n  mdadm --zero-superblock /dev/nvme5n1\n"
	if got := fx.out.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if len(fx.runner.calls) != 0 {
		t.Errorf("dry run ran %q", fx.runner.calls)
	}
}

// TestRaidBtrfsOnLoopDevices runs the command end to end on two loop
// devices: real /sys, real mkfs.btrfs, mount, fstab in a temporary file.
func TestRaidBtrfsOnLoopDevices(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Unavailable(t, "needs root for loop devices and mount")
	}
	for _, tool := range []string{"losetup", "mkfs.btrfs", "btrfs", "blkid", "wipefs", "mount"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.Unavailable(t, "%s is not installed (%s)", tool, raid.InstallHint(tool))
		}
	}
	dir := t.TempDir()
	var loops []string
	for i := 0; i < 2; i++ {
		img := filepath.Join(dir, fmt.Sprintf("d%d.img", i))
		if err := os.WriteFile(img, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(img, 256<<20); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("losetup", "-f", "--show", img).CombinedOutput()
		if err != nil {
			testenv.Unavailable(t, "no loop device: %v: %s", err, out)
		}
		dev := strings.TrimSpace(string(out))
		loops = append(loops, dev)
		t.Cleanup(func() { exec.Command("losetup", "-d", dev).Run() })
	}
	mnt := filepath.Join(dir, "striped")
	t.Cleanup(func() {
		exec.Command("umount", mnt).Run() // when a failure left it mounted
		exec.Command("btrfs", append([]string{"device", "scan", "--forget"}, loops...)...).Run()
	})
	fstab := filepath.Join(dir, "fstab")
	args := []string{"--engine", "btrfs", "--devices", strings.Join(loops, ","), "--name", "s3pdcmd", "--mount", mnt,
		"--owner", "nobody", "--fstab", "--fstab-file", fstab, "--yes"}
	real := func() *raidFixture {
		fx := newRaidFixture(t)
		fx.deps = raidDeps{system: raid.DefaultSystem(), runner: raid.ExecRunner{}, geteuid: os.Geteuid, lookPath: exec.LookPath}
		return fx
	}

	fx := real()
	if err := fx.run(args...); err != nil {
		t.Fatalf("%v\nstderr: %s", err, fx.err)
	}
	if !strings.Contains(fx.out.String(), "ready: "+loops[0]+" (btrfs over 2 devices") {
		t.Errorf("got stdout %q", fx.out)
	}
	if err := os.WriteFile(filepath.Join(mnt, "x"), []byte("striped"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(fstab)
	if !strings.Contains(string(b), " "+mnt+" btrfs defaults,noatime,nofail 0 0") {
		t.Errorf("got fstab %q", b)
	}

	fx = real()
	if err := fx.run(args...); err != nil {
		t.Fatalf("second run: %v\nstderr: %s", err, fx.err)
	}
	if !strings.Contains(fx.out.String(), "already in place, nothing changed") || strings.Contains(fx.err.String(), "done:") {
		t.Errorf("second run: got stdout %q stderr %q, want nothing changed", fx.out, fx.err)
	}

	fx = real()
	if err := fx.run("--teardown", "--engine", "btrfs", "--name", "s3pdcmd", "--mount", mnt, "--fstab-file", fstab, "--wipe", "--yes"); err != nil {
		t.Fatalf("teardown: %v\nstderr: %s", err, fx.err)
	}
	if b, _ := os.ReadFile(fstab); len(b) != 0 {
		t.Errorf("got fstab %q after teardown, want empty", b)
	}
	for _, d := range loops {
		if out, _ := exec.Command("blkid", "-p", "-o", "value", "-s", "TYPE", d).Output(); len(out) != 0 {
			t.Errorf("%s after --wipe: blkid says %q", d, out)
		}
	}
}

func TestRaidRefusesUncheckedDevicesUnlessForced(t *testing.T) {
	fx := newRaidFixture(t)
	if err := os.Remove(filepath.Join(fx.dir, "dev", "nvme2n1")); err != nil {
		t.Fatal(err)
	}
	args := []string{"--devices", "nvme1n1,nvme2n1", "--mount", filepath.Join(fx.dir, "s"), "--yes"}
	err := fx.run(args...)
	if err == nil || !strings.Contains(err.Error(), "cannot tell whether these hold data") {
		t.Fatalf("got %v, want a refusal for the unreadable /dev/nvme2n1", err)
	}
	if !strings.Contains(fx.err.String(), "warning: /dev/nvme2n1 was not checked") || len(fx.runner.calls) != 0 {
		t.Errorf("got stderr %q and commands %q, want a warning and no commands", fx.err, fx.runner.calls)
	}
	fx.err.Reset()
	if err := fx.run(append(args, "--force")...); err != nil {
		t.Fatalf("forced: %v\n%s", err, fx.err)
	}
}
