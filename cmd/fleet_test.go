package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/s3pd/s3pd/internal/job"
)

// The fleet's flags as the job's spec: the node, its peers in order, the
// token from the environment or a file (trimmed), the linger.
func TestFleetSpecFromFlags(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("  from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		env  string
		want job.FleetSpec
	}{
		{[]string{"--fleet", "1/3", "--peers", "10.0.0.1:7373, 10.0.0.2:7373,10.0.0.3:7000"}, "from-env",
			job.FleetSpec{Self: 1, Peers: []string{"10.0.0.1:7373", "10.0.0.2:7373", "10.0.0.3:7000"}, Token: "from-env", Linger: 5 * time.Minute}},
		{[]string{"--fleet", "0/2", "--peers", "[::1]:1,[::1]:2", "--fleet-token-file", tokenFile, "--fleet-linger", "0"}, "from-env",
			job.FleetSpec{Self: 0, Peers: []string{"[::1]:1", "[::1]:2"}, Token: "from-file"}},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			f := optionsFactory()
			f.Getenv = func(k string) string {
				if k == envFleetToken {
					return tt.env
				}
				return ""
			}
			var got *job.FleetSpec
			err := parse(t, NewCmdGet(f, func(_ context.Context, o *getOptions) error {
				spec, err := o.scale.spec(f.Getenv)
				if err != nil {
					return err
				}
				got, err = o.checkFleet(f.Getenv, spec)
				return err
			}), append(tt.args, "s3://bkt/p/", t.TempDir())...)
			if err != nil {
				t.Fatal(err)
			}
			if got == nil || !reflect.DeepEqual(*got, tt.want) {
				t.Errorf("spec %+v, want %+v", got, tt.want)
			}
		})
	}
}

// A fleet node's --json summary carries the fleet's fields under their
// documented names, and its text summary one line of the same.
func TestFleetSummary(t *testing.T) {
	s := newFleetSummary(&job.FleetReport{Node: 1, Nodes: 3, FromSource: 1 << 20, FromPeers: 2 << 20, ToPeers: 3 << 20, Peers: []job.FleetPeer{
		{Node: 0, Addr: "10.0.0.1:7373", From: 2 << 20, To: 3 << 20, Done: true},
		{Node: 2, Addr: "10.0.0.3:7373", Bypassed: true, Reason: "peer 10.0.0.3:7373: connection refused"},
	}})
	b, err := json.Marshal(summaryLine{header: newHeader(lineSummary), fleetSummary: s})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range m {
		if strings.HasPrefix(k, "fleet_") {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	want := []string{"fleet_bytes_from_peers", "fleet_bytes_from_source", "fleet_bytes_to_peers", "fleet_node", "fleet_nodes", "fleet_peers", "fleet_trusted_objects"}
	if !slices.Equal(keys, want) {
		t.Errorf("fleet fields %v, want %v", keys, want)
	}
	peers, _ := json.Marshal(m["fleet_peers"])
	if got := string(peers); got != `[{"addr":"10.0.0.1:7373","bypassed":false,"bytes_from":2097152,"bytes_to":3145728,"node":0},{"addr":"10.0.0.3:7373","bypassed":true,"bytes_from":0,"bytes_to":0,"node":2,"reason":"peer 10.0.0.3:7373: connection refused"}]` {
		t.Errorf("fleet_peers %s", got)
	}
	var w bytes.Buffer
	printFleet(&w, s)
	if got, want := w.String(), "fleet: node 1 of 3, 1.00 MiB from S3, 2.00 MiB from peers, 3.00 MiB served to peers; bypassed: node 2 (10.0.0.3:7373): peer 10.0.0.3:7373: connection refused; not finished when this node stopped serving: node 2\n"; got != want {
		t.Errorf("text line %q\nwant %q", got, want)
	}
	if b, _ := json.Marshal(summaryLine{header: newHeader(lineSummary)}); strings.Contains(string(b), "fleet_") {
		t.Errorf("a run without a fleet has fleet fields: %s", b)
	}
}
