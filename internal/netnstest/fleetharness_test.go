//go:build netns

package netnstest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/s3pd/s3pd/pkg/s3emu"
)

// The fleet's harness: nodes on a bridge, the emulator behind the one
// capped link, s3pd processes run in the node namespaces and stopped by
// their PIDs, their landings checked byte for byte.

const (
	fleetPort   = 7373 // each node's fleet server, on its own address
	sourcePort  = 8080 // the emulator, on the source's address
	fleetPrefix = "fleet/"
	fleetToken  = "netnstest-fleet-token"
)

// fleetEnv is a Fabric with the emulator serving a synthetic dataset in
// its source namespace and the s3pd binary built.
type fleetEnv struct {
	*Fabric
	bin      string
	emu      *s3emu.Server
	endpoint string
	data     s3emu.Dataset // the dataset, one group named "fleet"
}

// newFleetEnv builds nodes namespaces on a bridge, the emulator behind
// one link capped at rateMbit, serving the group "fleet:COUNT:SIZE".
func newFleetEnv(t testing.TB, nodes, rateMbit int, group string) *fleetEnv {
	t.Helper()
	f := NewFabric(t, FabricConfig{Nodes: nodes, SourceRateMbit: rateMbit})
	fe := &fleetEnv{Fabric: f, bin: buildS3pd(t)}
	addr := net.JoinHostPort(f.SourceAddr.String(), strconv.Itoa(sourcePort))
	// Prepared: ETags and checksums are computed now, not while a run
	// is timed. The emulator runs in this process; its socket lives in
	// the source namespace, so all it sends crosses the capped link.
	ts := s3emu.NewTestServer(t, s3emu.Options{Dataset: group, AllowRemote: true}, s3emu.Prepared(),
		s3emu.ListenWithin(addr, func(start func() error) error { return f.Do(f.Source, start) }))
	fe.emu, fe.endpoint, fe.data = ts.Server, ts.URL, ts.Dataset()
	if len(fe.data.Groups) != 1 || fe.data.Groups[0].Name+"/" != fleetPrefix {
		t.Fatalf("netnstest: dataset %q: want one group named %q", group, strings.TrimSuffix(fleetPrefix, "/"))
	}
	return fe
}

// peerAddr is node i's fleet address, host:port.
func (fe *fleetEnv) peerAddr(i int) string {
	return net.JoinHostPort(fe.Nodes[i].Addr.String(), strconv.Itoa(fleetPort))
}

// peerList is --peers for every node: each node's own address.
func (fe *fleetEnv) peerList() string {
	var p []string
	for i := range fe.Nodes {
		p = append(p, fe.peerAddr(i))
	}
	return strings.Join(p, ",")
}

// nodeRun is one s3pd process in a node namespace.
type nodeRun struct {
	node           int
	dest           string
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	start          time.Time
	done           chan struct{} // closed when the process was waited for
	err            error         // Wait's
	took           time.Duration // from start to exit
}

// exitCode is the process's exit status, -1 when a signal ended it.
func (r *nodeRun) exitCode() int {
	var ee *exec.ExitError
	switch {
	case r.err == nil:
		return 0
	case errors.As(r.err, &ee):
		return ee.ExitCode()
	}
	return -1
}

func (r *nodeRun) String() string {
	return fmt.Sprintf("node %d: %v after %v\nstdout:\n%s\nstderr:\n%s", r.node, r.err, r.took.Round(time.Millisecond), r.stdout.String(), r.stderr.String())
}

// startGets starts `s3pd get` of the prefix in every node at once (as
// close together as starting processes allows), each into dests[i]
// with the common flags and extra(i). A cleanup kills by its PID any
// process still running when the test ends.
func (fe *fleetEnv) startGets(t testing.TB, dests []string, extra func(i int) []string) []*nodeRun {
	t.Helper()
	runs := make([]*nodeRun, len(dests))
	for i, dest := range dests {
		args := []string{"get", "--quiet", "--json", "--no-sign-request", "--region", "us-east-1",
			"--endpoint-url", fe.endpoint, "s3://" + s3emu.DefaultBucket + "/" + fleetPrefix, dest}
		if extra != nil {
			args = append(args, extra(i)...)
		}
		// `ip netns exec` execs s3pd in place: the PID is s3pd's.
		cmd := fe.Command(context.Background(), fe.Nodes[i].NS, fe.bin, args...)
		if slices.Contains(args, "--fleet") {
			// Only with the flag: s3pd refuses S3PD_ variables it does not know.
			cmd.Env = append(cmd.Env, "S3PD_FLEET_TOKEN="+fleetToken)
		}
		r := &nodeRun{node: i, dest: dest, cmd: cmd, done: make(chan struct{})}
		cmd.Stdout, cmd.Stderr = &r.stdout, &r.stderr
		runs[i] = r
	}
	for _, r := range runs {
		r.start = time.Now()
		if err := r.cmd.Start(); err != nil {
			t.Fatalf("start node %d: %v", r.node, err)
		}
		t.Cleanup(func() {
			select {
			case <-r.done:
			default:
				r.cmd.Process.Kill()
				<-r.done
			}
		})
		go func() {
			r.err = r.cmd.Wait()
			r.took = time.Since(r.start)
			close(r.done)
		}()
	}
	return runs
}

// waitRuns waits for every run, or until d has passed, when it kills
// those left by their PIDs and fails the test.
func waitRuns(t testing.TB, runs []*nodeRun, d time.Duration) {
	t.Helper()
	deadline := time.After(d)
	for _, r := range runs {
		select {
		case <-r.done:
		case <-deadline:
			for _, r := range runs {
				r.cmd.Process.Kill()
				<-r.done
			}
			var b strings.Builder
			for _, r := range runs {
				b.WriteString(r.String())
			}
			t.Fatalf("runs still going after %v, killed:\n%s", d, b.String())
		}
	}
}

// kill sends SIGKILL to the run's process, by its PID.
func (r *nodeRun) kill() error { return r.cmd.Process.Signal(syscall.SIGKILL) }

// fleetSummary is what the tests read of a --json summary line.
type fleetSummary struct {
	Type            string      `json:"type"`
	Objects         int64       `json:"objects"`
	Failed          int64       `json:"failed"`
	Bytes           int64       `json:"bytes"`
	FleetNode       *int        `json:"fleet_node"`
	FleetNodes      int         `json:"fleet_nodes"`
	FromSource      int64       `json:"fleet_bytes_from_source"`
	FromPeers       int64       `json:"fleet_bytes_from_peers"`
	ToPeers         int64       `json:"fleet_bytes_to_peers"`
	Peers           []fleetPeer `json:"fleet_peers"`
	TrustedObjects  int64       `json:"fleet_trusted_objects"`
	VerifiedObjects int64       `json:"verified_objects"`
	Seconds         float64     `json:"seconds"`
	Requests        int64       `json:"requests"`
	Retries         int64       `json:"retries"`
	Hedged          int64       `json:"hedged"`
	Splits          int64       `json:"splits"`
}

type fleetPeer struct {
	Node      int    `json:"node"`
	Addr      string `json:"addr"`
	BytesFrom int64  `json:"bytes_from"`
	BytesTo   int64  `json:"bytes_to"`
	Bypassed  bool   `json:"bypassed"`
	Reason    string `json:"reason"`
}

// summary decodes the run's summary line (type "summary") from stdout.
func (r *nodeRun) summary() (fleetSummary, error) {
	lines := strings.Split(strings.TrimSpace(r.stdout.String()), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		var s fleetSummary
		if json.Unmarshal([]byte(lines[i]), &s) == nil && s.Type == "summary" {
			return s, nil
		}
	}
	return fleetSummary{}, fmt.Errorf("node %d: no summary line in its --json output", r.node)
}

// unverified lists the objects the run's --json lines do not report
// verified, with what they say instead: the emulator gives every object
// a full-object CRC, so a node verifies every object, whoever sent it.
func (r *nodeRun) unverified() []string {
	var bad []string
	for _, line := range strings.Split(r.stdout.String(), "\n") {
		var o struct {
			Type, Key, Verification, Unverified string
		}
		if json.Unmarshal([]byte(line), &o) == nil && o.Type == "object" && o.Verification != "verified" {
			bad = append(bad, fmt.Sprintf("%s (%s %s)", o.Key, o.Verification, o.Unverified))
		}
	}
	return bad
}

// checkLanded reports how dest differs from the dataset: every object
// landed byte for byte under its name below the prefix, and nothing else
// there (no temporary or partial file left at any name).
func (fe *fleetEnv) checkLanded(dest string) error {
	want := map[string]int64{}
	for _, g := range fe.data.Groups {
		for i := range g.Count {
			want[strings.TrimPrefix(g.Key(i), fleetPrefix)] = g.Size
		}
	}
	var problems []string
	seen := 0
	err := filepath.WalkDir(dest, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dest, p)
		size, ok := want[filepath.ToSlash(rel)]
		if !ok {
			problems = append(problems, "unexpected file "+rel)
			return nil
		}
		seen++
		got, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		exp := make([]byte, size)
		s3emu.SyntheticBytes(fleetPrefix+filepath.ToSlash(rel), 0, exp)
		if !bytes.Equal(got, exp) {
			problems = append(problems, fmt.Sprintf("%s: %d bytes, %s", rel, len(got), diffBytes(got, exp)))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("walk %s: %w", dest, err)
	}
	if seen != len(want) {
		problems = append(problems, fmt.Sprintf("%d of %d objects landed", seen, len(want)))
	}
	if len(problems) > 0 {
		if len(problems) > 5 {
			problems = append(problems[:5], fmt.Sprintf("and %d more", len(problems)-5))
		}
		return fmt.Errorf("%s: %s", dest, strings.Join(problems, "; "))
	}
	return nil
}

// fleetArgs are node i's fleet flags: --fleet i/N, the peer list, a linger.
func (fe *fleetEnv) fleetArgs(i int, peers string, linger time.Duration) []string {
	return []string{"--fleet", fmt.Sprintf("%d/%d", i, len(fe.Nodes)), "--peers", peers,
		"--fleet-linger", linger.String()}
}

// dests makes one empty destination directory per node under dir.
func dests(t testing.TB, dir string, n int) []string {
	t.Helper()
	var d []string
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("node%d", i))
		if err := os.RemoveAll(p); err != nil {
			t.Fatal(err)
		}
		d = append(d, p)
	}
	return d
}

// diffBytes says where got differs from want: how many bytes, the first
// offsets.
func diffBytes(got, want []byte) string {
	var at []string
	n := 0
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			if n++; n <= 4 {
				at = append(at, strconv.Itoa(i))
			}
		}
	}
	return fmt.Sprintf("%d differ from the object's %d (at %s)", n, len(want), strings.Join(at, ", "))
}

// linkDrops is what tc says of the source link's cap: packets sent,
// dropped, overlimits, since the fabric was built.
func (fe *fleetEnv) linkDrops(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("tc", "-s", "-n", fe.Source, "qdisc", "show", "dev", fe.SourceIf).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("tc: %v: %s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "dropped") {
			return strings.TrimSpace(line)
		}
	}
	return strings.TrimSpace(string(out))
}
