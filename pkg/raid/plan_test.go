package raid

import (
	"slices"
	"strings"
	"testing"
)

func inventory(t *testing.T) []Device {
	t.Helper()
	devs, err := fakeSystem(t).Discover()
	if err != nil {
		t.Fatal(err)
	}
	return devs
}

func renderSteps(p *Plan) []string {
	var out []string
	for _, s := range p.Steps() {
		out = append(out, s.String())
	}
	return out
}

func TestPlanCommands(t *testing.T) {
	tests := []struct {
		name string
		spec Spec
		want []string
	}{
		{"md xfs", Spec{Devices: []string{"/dev/nvme1n1", "/dev/nvme2n1"}, Mount: "/striped", Owner: "ubuntu", Fstab: true}, []string{
			"mdadm --create /dev/md0 --level=0 --raid-devices=2 --chunk=512 --run /dev/nvme1n1 /dev/nvme2n1",
			"mkfs.xfs -d su=512k,sw=2 /dev/md0",
			"mkdir -p /striped",
			"mount -o noatime /dev/md0 /striped",
			"chown ubuntu: /striped",
			`echo "UUID=$(blkid -s UUID -o value /dev/md0) /striped xfs defaults,noatime,nofail 0 0" >> /etc/fstab`,
		}},
		{"md ext4 256K three devices", Spec{Devices: []string{"nvme1n1", "nvme2n1", "nvme6n1"}, Name: "md1", Mount: "/data/x/", FS: "ext4", Chunk: 256 << 10, Owner: "a:b", Fstab: true, FstabFile: "/tmp/fstab"}, []string{
			"mdadm --create /dev/md1 --level=0 --raid-devices=3 --chunk=256 --run /dev/nvme1n1 /dev/nvme2n1 /dev/nvme6n1",
			"mkfs.ext4 -b 4096 -E stride=64,stripe_width=192 /dev/md1",
			"mkdir -p /data/x",
			"mount -o noatime /dev/md1 /data/x",
			"chown a:b /data/x",
			`echo "UUID=$(blkid -s UUID -o value /dev/md1) /data/x ext4 defaults,noatime,nofail 0 2" >> /tmp/fstab`,
		}},
		{"md forced over xfs and a partition table", Spec{Devices: []string{"/dev/nvme3n1", "/dev/nvme7n1"}, Mount: "/striped", Force: true}, []string{
			"wipefs -a /dev/nvme3n1 /dev/nvme7n1",
			"mdadm --create /dev/md0 --level=0 --raid-devices=2 --chunk=512 --run /dev/nvme3n1 /dev/nvme7n1",
			"mkfs.xfs -f -d su=512k,sw=2 /dev/md0",
			"mkdir -p /striped",
			"mount -o noatime /dev/md0 /striped",
		}},
		{"btrfs", Spec{Striping: StripingBtrfs, Devices: []string{"/dev/nvme1n1", "/dev/nvme2n1"}, Name: "landing", Mount: "/striped", Fstab: true}, []string{
			"mkfs.btrfs -d raid0 -m raid1 -L landing /dev/nvme1n1 /dev/nvme2n1",
			"btrfs device scan /dev/nvme1n1 /dev/nvme2n1",
			"mkdir -p /striped",
			"mount -o noatime /dev/nvme1n1 /striped",
			`echo "UUID=$(blkid -s UUID -o value /dev/nvme1n1) /striped btrfs defaults,noatime,nofail 0 0" >> /etc/fstab`,
		}},
	}
	inv := inventory(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := NewPlan(tt.spec, inv)
			if err != nil {
				t.Fatal(err)
			}
			if got := renderSteps(p); !slices.Equal(got, tt.want) {
				t.Errorf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(tt.want, "\n  "))
			}
		})
	}
}

func TestPlanRefuses(t *testing.T) {
	two := func(a, b string) []string { return []string{a, b} }
	tests := []struct {
		name string
		spec Spec
		want string // in the error
	}{
		{"root device", Spec{Devices: two("/dev/nvme0n1", "/dev/nvme1n1"), Mount: "/s"}, "/dev/nvme0n1: holds the root filesystem"},
		{"root device even forced", Spec{Devices: two("/dev/nvme0n1", "/dev/nvme1n1"), Mount: "/s", Force: true}, "whatever the flags"},
		{"mounted even forced", Spec{Devices: two("/dev/nvme4n1", "/dev/nvme1n1"), Mount: "/s", Force: true}, "/dev/nvme4n1: mounted at /data"},
		{"array member", Spec{Devices: two("/dev/nvme5n1", "/dev/nvme1n1"), Mount: "/s", Force: true}, "member of md5"},
		{"filesystem", Spec{Devices: two("/dev/nvme3n1", "/dev/nvme1n1"), Mount: "/s"}, "/dev/nvme3n1: holds data (xfs signature); pass --force"},
		{"partitioned", Spec{Devices: two("/dev/nvme7n1", "/dev/nvme1n1"), Mount: "/s"}, "/dev/nvme7n1: partitioned (nvme7n1p1); pass --force"},
		{"array itself", Spec{Devices: two("/dev/md5", "/dev/nvme1n1"), Mount: "/s"}, "is an md array itself"},
		{"unknown", Spec{Devices: two("/dev/sdz", "/dev/nvme1n1"), Mount: "/s"}, "/dev/sdz: not a whole block device"},
		{"partition", Spec{Devices: two("/dev/nvme7n1p1", "/dev/nvme1n1"), Mount: "/s"}, "not a whole block device"},
		{"twice", Spec{Devices: two("/dev/nvme1n1", "nvme1n1"), Mount: "/s"}, "listed twice"},
		{"one device", Spec{Devices: []string{"/dev/nvme1n1"}, Mount: "/s"}, "at least 2"},
		{"root mount", Spec{Devices: two("/dev/nvme1n1", "/dev/nvme2n1"), Mount: "/"}, "mount point /"},
		{"relative mount", Spec{Devices: two("/dev/nvme1n1", "/dev/nvme2n1"), Mount: "striped"}, "absolute path"},
		{"chunk not power of two", Spec{Devices: two("/dev/nvme1n1", "/dev/nvme2n1"), Mount: "/s", Chunk: 384 << 10}, "power of two"},
		{"chunk too small", Spec{Devices: two("/dev/nvme1n1", "/dev/nvme2n1"), Mount: "/s", Chunk: 2048}, "power of two"},
		{"btrfs chunk", Spec{Striping: StripingBtrfs, Devices: two("/dev/nvme1n1", "/dev/nvme2n1"), Mount: "/s", Chunk: 1 << 20}, "fixed 64 KiB"},
		{"md btrfs", Spec{Devices: two("/dev/nvme1n1", "/dev/nvme2n1"), Mount: "/s", FS: "btrfs"}, "xfs or ext4"},
		{"engine", Spec{Striping: "zfs", Devices: two("/dev/nvme1n1", "/dev/nvme2n1"), Mount: "/s"}, "want md or btrfs"},
		{"name", Spec{Devices: two("/dev/nvme1n1", "/dev/nvme2n1"), Mount: "/s", Name: "../x"}, "name"},
		{"owner", Spec{Devices: two("/dev/nvme1n1", "/dev/nvme2n1"), Mount: "/s", Owner: "a b"}, "owner"},
		{"partly in place", Spec{Devices: two("/dev/nvme5n1", "/dev/nvme1n1"), Mount: "/s", Name: "md5"}, "only 1 of 2 devices belong to md5"},
	}
	inv := inventory(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewPlan(tt.spec, inv)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestPlanRefusesEveryBadDeviceAtOnce(t *testing.T) {
	_, err := NewPlan(Spec{Devices: []string{"/dev/nvme0n1", "/dev/nvme3n1", "/dev/nvme4n1"}, Mount: "/s"}, inventory(t))
	if err == nil {
		t.Fatal("got no error")
	}
	for _, d := range []string{"nvme0n1", "nvme3n1", "nvme4n1"} {
		if !strings.Contains(err.Error(), d) {
			t.Errorf("got %q, want it to name %s", err, d)
		}
	}
}

func TestPlanWarnings(t *testing.T) {
	p, err := NewPlan(Spec{Devices: []string{"/dev/nvme1n1", "/dev/nvme6n1"}, Mount: "/s"}, inventory(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Warnings) != 2 || !strings.Contains(p.Warnings[0], "devices differ in size (/dev/nvme6n1 is 200 GiB, /dev/nvme1n1 is 1.7 TiB)") ||
		!strings.Contains(p.Warnings[1], "mixing instance store and EBS") {
		t.Errorf("got warnings %q, want a size warning and a mix warning", p.Warnings)
	}
	p, err = NewPlan(Spec{Devices: []string{"/dev/nvme1n1", "/dev/nvme2n1"}, Mount: "/s"}, inventory(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Warnings) != 0 {
		t.Errorf("got warnings %q for two equal instance-store drives, want none", p.Warnings)
	}
}

func TestPlanInPlace(t *testing.T) {
	inv := []Device{
		{Name: "a", Path: "/dev/a", Size: 1 << 30, Signature: "md", Holders: []string{"md0"}},
		{Name: "b", Path: "/dev/b", Size: 1 << 30, Signature: "md", Holders: []string{"md0"}},
		{Name: "c", Path: "/dev/c", Size: 1 << 30, Signature: "btrfs", Label: "land"},
		{Name: "d", Path: "/dev/d", Size: 1 << 30, Signature: "btrfs", Label: "land", MountPoints: []string{"/s"}},
	}
	p, err := NewPlan(Spec{Devices: []string{"/dev/a", "/dev/b"}, Mount: "/s"}, inv)
	if err != nil || !p.InPlace {
		t.Errorf("md members of md0: got %v, in place %v; want a plan already in place", err, p != nil && p.InPlace)
	}
	if _, err := NewPlan(Spec{Devices: []string{"/dev/a", "/dev/b"}, Mount: "/s", Name: "md1"}, inv); err == nil {
		t.Error("members of md0 planned as md1: got no error")
	}
	p, err = NewPlan(Spec{Striping: StripingBtrfs, Devices: []string{"/dev/c", "/dev/d"}, Name: "land", Mount: "/s"}, inv)
	if err != nil || !p.InPlace {
		t.Errorf("btrfs labelled land: got %v; want a plan already in place", err)
	}
}

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
	}{
		{"512K", 512 << 10}, {"512k", 512 << 10}, {"512KiB", 512 << 10}, {"1M", 1 << 20}, {"64KB", 64 << 10}, {"4096", 4096}, {"2g", 2 << 30},
	}
	for _, tt := range tests {
		if got, err := ParseSize(tt.in); err != nil || got != tt.want {
			t.Errorf("ParseSize(%q): got %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "K", "-1K", "1.5M", "12X"} {
		if _, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q): got no error", bad)
		}
	}
}

func TestHumanBytes(t *testing.T) {
	tests := []struct {
		in   int64
		want string
	}{{512, "512 B"}, {512 << 10, "512 KiB"}, {3662109375 * 512, "1.7 TiB"}, {200 << 30, "200 GiB"}}
	for _, tt := range tests {
		if got := HumanBytes(tt.in); got != tt.want {
			t.Errorf("HumanBytes(%d): got %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestPlanChecked(t *testing.T) {
	inv := []Device{
		{Name: "a", Path: "/dev/a", Size: 1 << 30, Unchecked: "cannot read /dev/a (not root)"},
		{Name: "b", Path: "/dev/b", Size: 1 << 30},
	}
	p, err := NewPlan(Spec{Devices: []string{"/dev/a", "/dev/b"}, Mount: "/s"}, inv)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], "/dev/a was not checked") {
		t.Errorf("got warnings %q, want one about /dev/a", p.Warnings)
	}
	if err := p.Checked(); err == nil || !strings.Contains(err.Error(), "cannot read /dev/a") {
		t.Errorf("got %v, want an error naming /dev/a", err)
	}
	p.Spec.Force = true
	if err := p.Checked(); err != nil {
		t.Errorf("forced: got %v, want nil", err)
	}
}

func TestPartSizeMatchesTheStripe(t *testing.T) {
	for _, tt := range []struct {
		striping     Striping
		chunk        int64
		members      int
		stripe, part int64
	}{
		{StripingMD, 512 << 10, 4, 2 << 20, 8 << 20},
		{StripingMD, 512 << 10, 3, 3 << 19, 9 << 20},
		{StripingMD, 1 << 20, 24, 24 << 20, 24 << 20},
		{StripingBtrfs, 0, 2, 128 << 10, 8 << 20},
		{StripingBtrfs, 0, 5, 320 << 10, 8320 << 10},
	} {
		p := &Plan{Spec: Spec{Striping: tt.striping, Chunk: tt.chunk}, Members: make([]Device, tt.members)}
		if got := p.Stripe(); got != tt.stripe {
			t.Errorf("%s %d x %d: stripe %d, want %d", tt.striping, tt.chunk, tt.members, got, tt.stripe)
		}
		if got := p.PartSize(); got != tt.part || got%tt.stripe != 0 || got < 8<<20 {
			t.Errorf("%s %d x %d: part size %d, want %d (whole stripes, at least 8 MiB)", tt.striping, tt.chunk, tt.members, got, tt.part)
		}
	}
}
