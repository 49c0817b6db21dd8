package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/s3pd/s3pd/pkg/nics"
)

func nicsTestFactory() (*Factory, *bytes.Buffer) {
	out := &bytes.Buffer{}
	return &Factory{
		IO:     &IOStreams{In: strings.NewReader(""), Out: out, ErrOut: &bytes.Buffer{}},
		Getenv: func(string) string { return "" },
	}, out
}

func fakeNicsReport() *nics.Report {
	src5, src6 := netip.MustParseAddr("10.0.0.10"), netip.MustParseAddr("10.0.0.20")
	return &nics.Report{
		Interfaces: []nics.Interface{
			{Name: "lo", Up: true, Loopback: true, MTU: 65536, IPv4: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/8")}},
			{Name: "ens5", Up: true, MTU: 9001, SpeedMbps: 100000, Driver: "ena", DefaultRoute: true,
				IPv4:   []netip.Prefix{netip.MustParsePrefix("10.0.0.10/24")},
				Routes: []nics.SourceRoute{{Source: src5, Rule: 10001, Table: 10002, Via: "ens5"}}},
			{Name: "ens6", Up: true, MTU: 9001, Driver: "ena",
				IPv4:   []netip.Prefix{netip.MustParsePrefix("10.0.0.20/24")},
				Routes: []nics.SourceRoute{{Source: src6, Rule: -1, Table: 254, Via: "ens5"}}},
			{Name: "ens7", MTU: 1500},
		},
		Suggested: []string{"ens5"},
		NICs:      "ens5",
		Warnings: []nics.Warning{{Interface: "ens6", Message: "no policy rule sends traffic from 10.0.0.20 out of ens6",
			Fix: "ip rule add from 10.0.0.20 lookup 103"}},
	}
}

func TestNicsTable(t *testing.T) {
	f, out := nicsTestFactory()
	c := newCmdNics(f, func(context.Context) (*nics.Report, error) { return fakeNicsReport(), nil }, nil)
	c.SetArgs(nil)
	if err := c.Execute(); err != nil {
		t.Fatalf("nics: %v", err)
	}
	got := out.String()
	for _, want := range []string{
		"NAME  STATE  MTU    SPEED       DRIVER  IPV4",
		"ens5  up     9001   100000Mb/s  ena     10.0.0.10/24  -     yes      rule 10001 table 10002 -> ens5",
		"ens6  up     9001   -           ena     10.0.0.20/24  -     -        main -> ens5",
		"ens7  down   1500   -           -       -             -     -        -",
		"\n--nics ens5\n",
		"warning: ens6: no policy rule sends traffic from 10.0.0.20 out of ens6\n  fix: ip rule add from 10.0.0.20 lookup 103\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q; got:\n%s", want, got)
		}
	}
}

func TestNicsJSON(t *testing.T) {
	f, out := nicsTestFactory()
	c := newCmdNics(f, func(context.Context) (*nics.Report, error) { return fakeNicsReport(), nil }, nil)
	c.SetArgs([]string{"--json"})
	if err := c.Execute(); err != nil {
		t.Fatalf("nics --json: %v", err)
	}
	var got nics.Report
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("decode %s: %v", out, err)
	}
	if got.NICs != "ens5" || len(got.Interfaces) != 4 || got.Interfaces[2].Routes[0].Via != "ens5" ||
		got.Interfaces[1].IPv4[0] != netip.MustParsePrefix("10.0.0.10/24") || len(got.Warnings) != 1 {
		t.Errorf("got %+v, want the report back", got)
	}
}

func TestNicsErrorsAndArgs(t *testing.T) {
	f, _ := nicsTestFactory()
	c := newCmdNics(f, func(context.Context) (*nics.Report, error) { return nil, errors.New("netlink: permission denied") }, nil)
	c.SetArgs(nil)
	c.SilenceErrors, c.SilenceUsage = true, true
	if err := c.Execute(); err == nil || !strings.Contains(err.Error(), "discover interfaces: netlink: permission denied") || exitCode(err) != ExitFailed {
		t.Errorf("got %v (exit %d), want a discovery error with exit %d", err, exitCode(err), ExitFailed)
	}
	c = NewCmdNics(f, nil)
	c.SetArgs([]string{"extra"})
	c.SilenceErrors, c.SilenceUsage = true, true
	if err := c.Execute(); err == nil {
		t.Errorf("nics extra: got no error, want one for the argument")
	}
}

// TestNicsThisMachine runs the real discovery: every machine has a loopback.
func TestNicsThisMachine(t *testing.T) {
	f, out := nicsTestFactory()
	c := NewCmdNics(f, nil)
	c.SetArgs([]string{"--json"})
	if err := c.Execute(); err != nil {
		t.Fatalf("nics: %v", err)
	}
	var got nics.Report
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("decode %s: %v", out, err)
	}
	found := false
	for _, i := range got.Interfaces {
		found = found || (i.Loopback && len(i.IPv4) > 0)
	}
	if !found {
		t.Errorf("got %s, want the loopback listed", out)
	}
}
