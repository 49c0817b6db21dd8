package nics

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestDefaultRouteInterfaces(t *testing.T) {
	tests := []struct {
		procNet string
		want    []string
	}{
		{"testdata/ec2/net", []string{"ens5"}}, // lowest metric wins over ens6
		{"testdata/v6only/net", []string{"eth0"}},
		{t.TempDir(), nil}, // no files: no default route, no error
	}
	for _, tt := range tests {
		got, err := defaultRouteInterfaces(tt.procNet)
		if err != nil {
			t.Fatalf("defaultRouteInterfaces(%s): %v", tt.procNet, err)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("defaultRouteInterfaces(%s): got %v, want %v", tt.procNet, got, tt.want)
		}
	}
}

func TestParseRouteLines(t *testing.T) {
	tests := []struct {
		line string
		v6   bool
		dev  string
		ok   bool
	}{
		{"eth0\t00000000\t010200C0\t0003\t0\t0\t100\t00000000\t0\t0\t0", false, "eth0", true},
		{"eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0", false, "", false}, // not default
		{"eth0\t00000000\t010200C0\t0002\t0\t0\t0\t00000000\t0\t0\t0", false, "", false}, // not up
		{"Iface\tDestination\tGateway\tFlags\tRefCnt\tUse\tMetric\tMask", false, "", false},
		{"00000000000000000000000000000000 00 00000000000000000000000000000000 00 00000000000000000000000000000000 ffffffff 00000001 00000000 00200200 lo", true, "", false},
		{"00000000000000000000000000000000 00 00000000000000000000000000000000 00 fd000000000000000000000000000001 00000400 00000002 00000000 00000003 eth0", true, "eth0", true},
		{"fd000000000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001 eth0", true, "", false},
	}
	for _, tt := range tests {
		parse := parseRouteLine
		if tt.v6 {
			parse = parseIPv6RouteLine
		}
		d, ok := parse(tt.line)
		if ok != tt.ok || d.dev != tt.dev {
			t.Errorf("parse(%q): got %q %v, want %q %v", tt.line, d.dev, ok, tt.dev, tt.ok)
		}
	}
}

func TestReadSysfs(t *testing.T) {
	root := t.TempDir()
	nic := filepath.Join(root, "ens5")
	must(t, os.MkdirAll(filepath.Join(nic, "device"), 0o755))
	must(t, os.WriteFile(filepath.Join(nic, "speed"), []byte("100000\n"), 0o644))
	must(t, os.Symlink("../../../bus/pci/drivers/ena", filepath.Join(nic, "device", "driver")))
	br := filepath.Join(root, "docker0")
	must(t, os.MkdirAll(filepath.Join(br, "bridge"), 0o755))
	must(t, os.WriteFile(filepath.Join(br, "speed"), []byte("-1\n"), 0o644))

	var got Interface
	readSysfs(&got, nic)
	if got.SpeedMbps != 100000 || got.Driver != "ena" || got.Bridge {
		t.Errorf("ens5: got speed %d driver %q bridge %v, want 100000 ena false", got.SpeedMbps, got.Driver, got.Bridge)
	}
	got = Interface{}
	readSysfs(&got, br)
	if got.SpeedMbps != 0 || got.Driver != "" || !got.Bridge {
		t.Errorf("docker0: got speed %d driver %q bridge %v, want 0 \"\" true", got.SpeedMbps, got.Driver, got.Bridge)
	}
	got = Interface{}
	readSysfs(&got, filepath.Join(root, "missing"))
	if got.SpeedMbps != 0 || got.Driver != "" || got.Bridge {
		t.Errorf("missing: got %+v, want empty", got)
	}
}

func TestReadRPFilter(t *testing.T) {
	root := t.TempDir()
	conf := filepath.Join(root, "net", "ipv4", "conf")
	for dev, v := range map[string]string{"all": "0", "ens5": "1", "ens6": "0", "eth0/100": "2"} {
		must(t, os.MkdirAll(filepath.Join(conf, dev), 0o755))
		must(t, os.WriteFile(filepath.Join(conf, dev, "rp_filter"), []byte(v+"\n"), 0o644))
	}
	tests := []struct {
		name string
		want int
	}{{"ens5", 1}, {"ens6", 0}, {"eth0.100", 2}, {"nope", -1}}
	for _, tt := range tests {
		if got := readRPFilter(root, tt.name); got != tt.want {
			t.Errorf("readRPFilter(%s): got %d, want %d", tt.name, got, tt.want)
		}
	}
	must(t, os.WriteFile(filepath.Join(conf, "all", "rp_filter"), []byte("2\n"), 0o644))
	if got := readRPFilter(root, "ens6"); got != 2 {
		t.Errorf("readRPFilter(ens6) with all=2: got %d, want 2 (the larger)", got)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
