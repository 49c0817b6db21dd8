package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/s3pd/s3pd/pkg/s3emu"
)

// The fleet's tests run every node as its own s3pd process, each with
// its server on a port of 127.0.0.1 and its own DEST, against one
// emulator.

const fleetToken = "e2e-fleet-token"

// fleetLine is what the tests read of a --fleet node's --json summary.
type fleetLine struct {
	Type       string `json:"type"`
	Objects    int64  `json:"objects"`
	Skipped    int64  `json:"skipped"`
	Failed     int64  `json:"failed"`
	Bytes      int64  `json:"bytes"`
	Resumed    int64  `json:"resumed_objects"`
	Node       *int   `json:"fleet_node"`
	Nodes      int    `json:"fleet_nodes"`
	FromSource int64  `json:"fleet_bytes_from_source"`
	FromPeers  int64  `json:"fleet_bytes_from_peers"`
	ToPeers    int64  `json:"fleet_bytes_to_peers"`
	Trusted    *int64 `json:"fleet_trusted_objects"`
	Peers      []struct {
		Node     int    `json:"node"`
		Addr     string `json:"addr"`
		From     int64  `json:"bytes_from"`
		To       int64  `json:"bytes_to"`
		Bypassed bool   `json:"bypassed"`
		Reason   string `json:"reason"`
	} `json:"fleet_peers"`
}

// fleetSummary parses the summary line of a node's --json output.
func fleetSummary(t *testing.T, stdout string) fleetLine {
	t.Helper()
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var l fleetLine
		if json.Unmarshal([]byte(line), &l) == nil && l.Type == "summary" {
			if l.Node == nil {
				t.Fatalf("summary %s has no fleet_node", line)
			}
			return l
		}
	}
	t.Fatalf("no summary line in %q", stdout)
	return fleetLine{}
}

// fleetDataset puts about 24 MiB of objects of mixed sizes under
// prefix, each with a CRC64NVME of S3's, and returns them by name.
func fleetDataset(t *testing.T, s *store, prefix string) (map[string][]byte, int64) {
	t.Helper()
	want := map[string][]byte{}
	var total int64
	add := func(name string, n int) {
		data := randomBytes(uint64(len(want)+1)*7919, n)
		_, err := s.client.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(prefix + name),
			Body: bytes.NewReader(data), ChecksumAlgorithm: types.ChecksumAlgorithmCrc64nvme})
		if err != nil {
			t.Fatalf("put %s: %v", name, err)
		}
		want[name] = data
		total += int64(n)
	}
	for i := range 4 {
		add(fmt.Sprintf("big/%d.bin", i), 3<<20+i*123457)
	}
	for i := range 10 {
		add(fmt.Sprintf("mid/%d.bin", i), 700<<10+i*4099)
	}
	for i := range 24 {
		add(fmt.Sprintf("small/%02d.txt", i), 1+i*2731)
	}
	add("empty", 0)
	return want, total
}

// freeAddrs returns n addresses of 127.0.0.1 with ports free just now.
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	var out []string
	var lns []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		out = append(out, ln.Addr().String())
	}
	for _, ln := range lns {
		ln.Close()
	}
	return out
}

// fleetArgs are node k's command line: get the prefix into dir as node
// k of the fleet at peers.
func fleetArgs(s *store, prefix, dir string, k int, peers []string, extra ...string) []string {
	args := s.cmd("get", "--json", "--partsize", "1MiB", "--multipart-threshold", "1MiB",
		"--fleet", fmt.Sprintf("%d/%d", k, len(peers)), "--peers", strings.Join(peers, ","))
	return append(append(args, extra...), s.url(prefix), dir)
}

// s3Bytes is the object bytes the emulator sent for the keys of want.
func s3Bytes(emu *s3emu.Server, bucket, prefix string, want map[string][]byte) int64 {
	var n int64
	for name := range want {
		n += emu.BytesSentFor(bucket, prefix+name)
	}
	return n
}

func TestFleetFetchesOncePerFleet(t *testing.T) {
	s := emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory})
	const prefix, nodes = "fleet/", 3
	want, total := fleetDataset(t, s, prefix)
	peers := freeAddrs(t, nodes)
	var args, env [][]string
	var dirs []string
	for k := range nodes {
		dirs = append(dirs, filepath.Join(t.TempDir(), "dest"))
		args = append(args, fleetArgs(s, prefix, dirs[k], k, peers, "--fleet-linger", "60s"))
		env = append(env, []string{"S3PD_FLEET_TOKEN=" + fleetToken})
	}
	res := runAll(t, env, args)
	var fromSource, fromPeers, toPeers int64
	for k, r := range res {
		if r.code != 0 {
			t.Fatalf("node %d: exit %d\nstderr: %s", k, r.code, r.stderr)
		}
		sameTree(t, dirs[k], want)
		checkLines(t, jsonSpec(t), r.stdout) // every field documented
		l := fleetSummary(t, r.stdout)
		if *l.Node != k || l.Nodes != nodes || len(l.Peers) != nodes-1 || l.Trusted == nil {
			t.Errorf("node %d: fleet_node %d, fleet_nodes %d, %d peers, trusted %v; want %d, %d, %d, a count", k, *l.Node, l.Nodes, len(l.Peers), l.Trusted, k, nodes, nodes-1)
		}
		if got := l.FromSource + l.FromPeers; got < l.Bytes || float64(got) > 1.05*float64(l.Bytes) {
			t.Errorf("node %d: %d bytes from S3 + %d from peers = %d, its run moved %d", k, l.FromSource, l.FromPeers, got, l.Bytes)
		}
		if l.Bytes != total || l.FromPeers == 0 || l.ToPeers == 0 {
			t.Errorf("node %d: %d bytes (want %d), %d from peers, %d to peers: want some of each", k, l.Bytes, total, l.FromPeers, l.ToPeers)
		}
		var from, to int64
		for _, p := range l.Peers {
			if p.Bypassed || p.Addr != peers[p.Node] || p.Node == k {
				t.Errorf("node %d: peer %+v: want node %d's address, not bypassed", k, p, p.Node)
			}
			from, to = from+p.From, to+p.To
		}
		if from != l.FromPeers || to != l.ToPeers {
			t.Errorf("node %d: its peers' bytes add up to %d from, %d to; its totals say %d, %d", k, from, to, l.FromPeers, l.ToPeers)
		}
		fromSource, fromPeers, toPeers = fromSource+l.FromSource, fromPeers+l.FromPeers, toPeers+l.ToPeers
	}
	if fromPeers != toPeers {
		t.Errorf("the nodes took %d bytes from peers, and served %d", fromPeers, toPeers)
	}
	sent := s3Bytes(s.emu, s.bucket, prefix, want)
	if float64(sent) > 1.05*float64(total) {
		t.Errorf("the emulator sent %d object bytes for a dataset of %d (%.2fx): want the fleet to fetch it about once", sent, total, float64(sent)/float64(total))
	}
	if fromSource > sent || float64(fromSource) < 0.95*float64(sent) {
		// A body given up (a range taken over) is sent in part and
		// never read: the emulator may count a little more.
		t.Errorf("the emulator sent %d object bytes, the nodes counted %d from S3", sent, fromSource)
	}
	// shards check reads the fleet's outputs: every node, and where
	// its bytes came from; a node missing is named.
	outs := saveOutputs(t, res)
	r := run(t, nil, append([]string{"shards", "check"}, outs...)...)
	if r.code != 0 || !strings.Contains(r.stdout, fmt.Sprintf("ok: 3 nodes each landed the listing's %d objects", len(want))) || !strings.Contains(r.stdout, "node 2: ") {
		t.Errorf("shards check: exit %d, %q; want ok for 3 nodes, a line for each", r.code, r.stdout)
	}
	if r := run(t, nil, "shards", "check", outs[0], outs[1]); r.code != 1 || !strings.Contains(r.stdout, "missing node 2/3") {
		t.Errorf("shards check without node 2: exit %d, %q; want exit 1 naming it", r.code, r.stdout)
	}
	t.Logf("dataset %d bytes; S3 sent %d (%.3fx); peers moved %d", total, sent, float64(sent)/float64(total), fromPeers)
}

// node is one s3pd process of a fleet, started and not yet waited for.
type node struct {
	cmd            *exec.Cmd
	stdout, stderr *syncBuffer
	done           chan result
}

// syncBuffer is a buffer a process writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startNode starts s3pd with args and env; wait collects it.
func startNode(t *testing.T, env []string, args []string) *node {
	t.Helper()
	c := exec.Command(bin, args...)
	c.Env = append(baseEnv(t), env...)
	n := &node{cmd: c, stdout: &syncBuffer{}, stderr: &syncBuffer{}, done: make(chan result, 1)}
	c.Stdout, c.Stderr = n.stdout, n.stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := c.Wait()
		r := result{stdout: n.stdout.String(), stderr: n.stderr.String()}
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			r.code = ee.ExitCode()
		}
		n.done <- r
	}()
	t.Cleanup(func() {
		c.Process.Kill() // by its PID; a no-op once it exited
	})
	return n
}

// wait waits for the node to exit, two minutes at most.
func (n *node) wait(t *testing.T) result {
	t.Helper()
	select {
	case r := <-n.done:
		return r
	case <-time.After(2 * time.Minute):
		n.cmd.Process.Signal(syscall.SIGQUIT)
		r := <-n.done
		t.Fatalf("node did not exit in 2 minutes; stderr: %s", r.stderr)
		return r
	}
}

// landed says dir holds every file of want, whole.
func landed(dir string, want map[string][]byte) bool {
	for name, data := range want {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil || st.Size() != int64(len(data)) {
			return false
		}
	}
	return true
}

// A node killed with SIGKILL in the middle of its run is bypassed by the
// others, which land everything from S3 and their peers and name it;
// restarted while they linger, it resumes, takes what it lacks from them
// and says it is done, and all of them exit 0 with every file exact.
// Meanwhile a request without the token gets 403 and no body.
func TestFleetSurvivesAKilledNode(t *testing.T) {
	s := emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory})
	const prefix, nodes, victim = "fleet/", 3, 2
	want, _ := fleetDataset(t, s, prefix)
	peers := freeAddrs(t, nodes)
	env := []string{"S3PD_FLEET_TOKEN=" + fleetToken}
	dirs := make([]string, nodes)
	running := make([]*node, nodes)
	for k := range nodes {
		dirs[k] = filepath.Join(t.TempDir(), "dest")
		extra := []string{"--fleet-linger", "90s"}
		if k == victim {
			// Slow, a part at a time: still running when killed, with
			// parts of a file journaled.
			extra = append(extra, "--max-bandwidth", "2MiB/s", "--threads", "2")
		}
		running[k] = startNode(t, env, fleetArgs(s, prefix, dirs[k], k, peers, extra...))
	}
	// Kill the victim once it has journaled a part of a file.
	if !eventually(30*time.Second, func() bool { return journaled(t, dirs[victim]) > 0 }) {
		t.Fatalf("node %d journaled no part in 30 s", victim)
	}
	running[victim].cmd.Process.Signal(syscall.SIGKILL)
	if r := running[victim].wait(t); r.code != -1 {
		t.Fatalf("killed node: exit %d, want killed", r.code)
	}
	for k := range nodes {
		if k != victim && !eventually(60*time.Second, func() bool { return landed(dirs[k], want) }) {
			t.Fatalf("node %d did not land the dataset without node %d", k, victim)
		}
	}
	// The others linger for the victim: they refuse a request without
	// the fleet's token, or with another.
	for _, tok := range []string{"", "not-the-token"} {
		req, _ := http.NewRequest(http.MethodGet, "http://"+peers[0]+"/fleet/v1/object?key="+prefix+"small/01.txt", nil)
		if tok != "" {
			req.Header.Set("S3pd-Fleet-Token", tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("node 0 does not answer while it lingers: %v", err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || len(body) != 0 {
			t.Errorf("token %q: %s with %d bytes of body, want 403 and none", tok, resp.Status, len(body))
		}
	}
	restarted := startNode(t, env, fleetArgs(s, prefix, dirs[victim], victim, peers, "--fleet-linger", "90s"))
	r := restarted.wait(t)
	if r.code != 0 {
		t.Fatalf("restarted node: exit %d\nstderr: %s", r.code, r.stderr)
	}
	sameTree(t, dirs[victim], want)
	l := fleetSummary(t, r.stdout)
	t.Logf("restarted node: %d transferred, %d skipped, %d resumed; %d bytes from S3, %d from peers", l.Objects, l.Skipped, l.Resumed, l.FromSource, l.FromPeers)
	if l.Resumed == 0 || l.FromPeers == 0 || l.Failed != 0 {
		t.Errorf("restarted node: %d resumed, %d bytes from peers, %d failed: want the journaled file resumed and the rest partly from peers", l.Resumed, l.FromPeers, l.Failed)
	}
	for k := range nodes {
		if k == victim {
			continue
		}
		r := running[k].wait(t)
		if r.code != 0 {
			t.Fatalf("node %d: exit %d\nstderr: %s", k, r.code, r.stderr)
		}
		sameTree(t, dirs[k], want)
		if !strings.Contains(r.stderr, "this node is done and serves its peers, waiting for") || !strings.Contains(r.stderr, "2 to finish") {
			t.Errorf("node %d did not say it waits for node 2: %s", k, r.stderr)
		}
		l := fleetSummary(t, r.stdout)
		t.Logf("node %d: %d bytes from S3, %d from peers, %d to peers; peers %+v", k, l.FromSource, l.FromPeers, l.ToPeers, l.Peers)
		named := false
		for _, p := range l.Peers {
			named = named || p.Node == victim && p.Bypassed && p.Reason != ""
		}
		if !named {
			t.Errorf("node %d: summary does not name node %d as bypassed: %+v", k, victim, l.Peers)
		}
	}
}

// A node with no token, or asked for one object, is refused: exit 2 and
// one line, before anything is fetched.
func TestFleetRefusals(t *testing.T) {
	s := emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory})
	s.put(t, "one/obj", []byte("hello"))
	peers := freeAddrs(t, 2)
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want string
		// quiet: refused before any request (a single object is found
		// so by asking)
		quiet bool
	}{
		{"no token", nil, fleetArgs(s, "one/", t.TempDir(), 0, peers), "--fleet needs the fleet's token", true},
		{"single object", []string{"S3PD_FLEET_TOKEN=t"}, append(s.cmd("get", "--fleet", "0/2", "--peers", strings.Join(peers, ",")), s.url("one/obj"), t.TempDir()), "is a single object", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := s.emu.Stats().Requests
			r := run(t, tc.env, tc.args...)
			line := strings.TrimSpace(r.stderr)
			if r.code != 2 || strings.Count(line, "\n") != 0 || !strings.Contains(line, tc.want) {
				t.Errorf("exit %d, stderr %q; want exit 2 and one line with %q", r.code, line, tc.want)
			}
			if sent := s.emu.Stats().Requests - before; tc.quiet && sent != 0 {
				t.Errorf("the refused run sent %d requests", sent)
			}
		})
	}
}

// With --fleet-tls-cert and --fleet-tls-key the nodes serve each other
// over TLS, trusting the certificates --fleet-ca signed: the bytes still
// come from peers, none bypassed. A node that trusts another CA cannot
// take them: it bypasses its peer and lands everything from S3.
func TestFleetOverTLS(t *testing.T) {
	s := emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory})
	const prefix = "fleet/"
	want, _ := fleetDataset(t, s, prefix)
	cert, key := selfSignedFiles(t, t.TempDir())
	other, _ := selfSignedFiles(t, t.TempDir())
	for _, tc := range []struct {
		name    string
		ca      string
		trusted bool
		linger  string // a node that cannot tell its peer it is done waits this long
	}{{"trusted", cert, true, "30s"}, {"another CA", other, false, "2s"}} {
		t.Run(tc.name, func(t *testing.T) {
			peers := freeAddrs(t, 2)
			var args, env [][]string
			var dirs []string
			for k := range 2 {
				dirs = append(dirs, filepath.Join(t.TempDir(), "dest"))
				args = append(args, fleetArgs(s, prefix, dirs[k], k, peers, "--fleet-linger", tc.linger,
					"--fleet-tls-cert", cert, "--fleet-tls-key", key, "--fleet-ca", tc.ca))
				env = append(env, []string{"S3PD_FLEET_TOKEN=" + fleetToken})
			}
			for k, r := range runAll(t, env, args) {
				if r.code != 0 {
					t.Fatalf("node %d: exit %d\nstderr: %s", k, r.code, r.stderr)
				}
				sameTree(t, dirs[k], want)
				l := fleetSummary(t, r.stdout)
				p := l.Peers[0]
				if tc.trusted && (l.FromPeers == 0 || p.Bypassed) || !tc.trusted && (l.FromPeers != 0 || !p.Bypassed || !strings.Contains(p.Reason, "certificate")) {
					t.Errorf("node %d: %d bytes from peers, peer %+v", k, l.FromPeers, p)
				}
			}
		})
	}
}

// A node that finished its run and lingers for a peer that never says
// done (here a listener that drops every connection) ends on SIGINT
// with exit 0: its download was complete, only the lingering was cut.
func TestFleetInterruptedWhileLingering(t *testing.T) {
	s := emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory})
	const prefix = "fleet/"
	want, _ := fleetDataset(t, s, prefix)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	peers := []string{freeAddrs(t, 1)[0], ln.Addr().String()}
	dir := filepath.Join(t.TempDir(), "dest")
	n := startNode(t, []string{"S3PD_FLEET_TOKEN=" + fleetToken}, fleetArgs(s, prefix, dir, 0, peers, "--fleet-linger", "5m"))
	if !eventually(60*time.Second, func() bool { return strings.Contains(n.stderr.String(), "waiting for node 1 to finish") }) {
		n.cmd.Process.Kill()
		t.Fatalf("node 0 did not say it lingers: %s", (<-n.done).stderr)
	}
	n.cmd.Process.Signal(syscall.SIGINT)
	r := n.wait(t)
	if r.code != 0 {
		t.Fatalf("interrupted while lingering: exit %d, want 0\nstderr: %s", r.code, r.stderr)
	}
	sameTree(t, dir, want)
	l := fleetSummary(t, r.stdout)
	if !l.Peers[0].Bypassed || l.Failed != 0 || l.Objects != int64(len(want)) {
		t.Errorf("summary: %d objects, %d failed, peer %+v; want every object and the dead peer bypassed", l.Objects, l.Failed, l.Peers[0])
	}
}

// kmsStore is the emulator behind a front that answers as S3 does for
// objects kept with SSE-KMS (their ETag is no MD5 of their bytes), and
// that keeps no full-object checksum: S3 gives nothing to check a
// peer's bytes of them by.
func kmsStore(t *testing.T) *store {
	t.Helper()
	ts := s3emu.NewTestServer(t, s3emu.Options{Backend: s3emu.BackendMemory, NoChecksums: true}, s3emu.Unstarted())
	h := ts.Handler()
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Amz-Server-Side-Encryption", "aws:kms")
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	return &store{name: "emulator (SSE-KMS)", endpoint: front.URL, bucket: s3emu.DefaultBucket, client: newClient(t, front.URL), emu: ts.Server}
}

// Objects S3 gives nothing to verify against (SSE-KMS, no CRC) come from
// S3 on every node, never from a peer; with --fleet-trust-peers they
// come from peers, and the summary counts them (fleet_trusted_objects)
// and says so.
func TestFleetTrustPeers(t *testing.T) {
	s := kmsStore(t)
	const prefix = "kms/"
	want := map[string][]byte{}
	var total int64
	for i := range 8 {
		name := fmt.Sprintf("f%d.bin", i)
		want[name] = randomBytes(uint64(i+1)*104729, 200<<10+i*70001)
		total += int64(len(want[name]))
		s.put(t, prefix+name, want[name])
	}
	for _, trust := range []bool{false, true} {
		t.Run(fmt.Sprintf("trust=%v", trust), func(t *testing.T) {
			peers := freeAddrs(t, 2)
			before := s3Bytes(s.emu, s.bucket, prefix, want)
			var args, env [][]string
			var dirs []string
			for k := range 2 {
				dirs = append(dirs, filepath.Join(t.TempDir(), "dest"))
				extra := []string{"--fleet-linger", "30s"}
				if trust {
					extra = append(extra, "--fleet-trust-peers")
				}
				args = append(args, fleetArgs(s, prefix, dirs[k], k, peers, extra...))
				env = append(env, []string{"S3PD_FLEET_TOKEN=" + fleetToken})
			}
			var trusted int64
			for k, r := range runAll(t, env, args) {
				if r.code != 0 {
					t.Fatalf("node %d: exit %d\nstderr: %s", k, r.code, r.stderr)
				}
				sameTree(t, dirs[k], want)
				l := fleetSummary(t, r.stdout)
				t.Logf("node %d: %d bytes from S3, %d from peers, %d to peers, %d trusted", k, l.FromSource, l.FromPeers, l.ToPeers, *l.Trusted)
				if l.Peers[0].Bypassed {
					t.Errorf("node %d bypassed its peer: %s", k, l.Peers[0].Reason)
				}
				switch {
				case !trust && (l.FromPeers != 0 || l.ToPeers != 0 || *l.Trusted != 0 || l.FromSource < total):
					t.Errorf("node %d without --fleet-trust-peers: %d bytes from peers, %d to, %d trusted, %d from S3; want all %d from S3",
						k, l.FromPeers, l.ToPeers, *l.Trusted, l.FromSource, total)
				case trust && (l.FromPeers == 0 || l.ToPeers == 0 || *l.Trusted == 0):
					t.Errorf("node %d with --fleet-trust-peers: %d bytes from peers, %d to, %d trusted; want some of each", k, l.FromPeers, l.ToPeers, *l.Trusted)
				}
				trusted += *l.Trusted
			}
			sent := s3Bytes(s.emu, s.bucket, prefix, want) - before
			switch {
			case !trust && sent < 2*total:
				t.Errorf("S3 sent %d bytes, want the dataset's %d to each node", sent, total)
			case trust && (sent > total*105/100 || trusted > int64(len(want))):
				t.Errorf("S3 sent %d bytes for a dataset of %d, %d objects trusted of %d; want it fetched once", sent, total, trusted, len(want))
			}
		})
	}
	// The text summary says what was taken unchecked.
	peers := freeAddrs(t, 2)
	var args, env [][]string
	for k := range 2 {
		a := fleetArgs(s, prefix, filepath.Join(t.TempDir(), "dest"), k, peers, "--fleet-linger", "30s", "--fleet-trust-peers")
		args = append(args, slices.DeleteFunc(a, func(v string) bool { return v == "--json" }))
		env = append(env, []string{"S3PD_FLEET_TOKEN=" + fleetToken})
	}
	for k, r := range runAll(t, env, args) {
		if out := r.stdout + r.stderr; r.code != 0 || !strings.Contains(out, "taken from peers unchecked (--fleet-trust-peers)") {
			t.Errorf("node %d: exit %d, summary %q; want it to say what was taken unchecked", k, r.code, out)
		}
	}
}

// A node that stops answering in the middle of its run (SIGSTOP: its
// sockets stay open, nothing is read or sent) is bypassed by the others
// once it sends nothing for the peers' stall timeout (half of a
// --stall-timeout under 10 s, so that the engine does not give the
// range up first and ask the same peer again); they split its share,
// fetching it from S3 between them, land everything and name it. Let go
// on (SIGCONT) while they linger, it finishes too, and all exit 0.
func TestFleetSurvivesAStalledNode(t *testing.T) {
	s := emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory})
	const prefix, nodes, victim = "fleet/", 3, 2
	want, total := fleetDataset(t, s, prefix)
	peers := freeAddrs(t, nodes)
	env := []string{"S3PD_FLEET_TOKEN=" + fleetToken}
	dirs := make([]string, nodes)
	running := make([]*node, nodes)
	for k := range nodes {
		dirs[k] = filepath.Join(t.TempDir(), "dest")
		extra := []string{"--fleet-linger", "90s", "--stall-timeout", "4s"}
		if k == victim {
			extra = append(extra, "--max-bandwidth", "2MiB/s", "--threads", "2")
		}
		running[k] = startNode(t, env, fleetArgs(s, prefix, dirs[k], k, peers, extra...))
	}
	pid := running[victim].cmd.Process.Pid
	if !eventually(30*time.Second, func() bool { return journaled(t, dirs[victim]) > 0 }) {
		t.Fatalf("node %d journaled no part in 30 s", victim)
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := true
	defer func() {
		if stopped {
			syscall.Kill(pid, syscall.SIGCONT) // by its PID; the cleanup kills it
		}
	}()
	for k := range nodes {
		if k != victim && !eventually(90*time.Second, func() bool { return landed(dirs[k], want) }) {
			t.Fatalf("node %d did not land the dataset while node %d was stopped", k, victim)
		}
	}
	syscall.Kill(pid, syscall.SIGCONT)
	stopped = false
	res := make([]result, nodes)
	for k := range nodes {
		res[k] = running[k].wait(t)
		if res[k].code != 0 {
			t.Fatalf("node %d: exit %d\nstderr: %s", k, res[k].code, res[k].stderr)
		}
		sameTree(t, dirs[k], want)
	}
	var fromSource int64
	for k := range nodes {
		l := fleetSummary(t, res[k].stdout)
		t.Logf("node %d: %d bytes from S3, %d from peers, %d to peers; peers %+v", k, l.FromSource, l.FromPeers, l.ToPeers, l.Peers)
		if k == victim {
			continue
		}
		fromSource += l.FromSource
		named := false
		for _, p := range l.Peers {
			named = named || p.Node == victim && p.Bypassed && strings.Contains(p.Reason, "sent nothing")
		}
		if !named {
			t.Errorf("node %d: summary does not name node %d as stalled: %+v", k, victim, l.Peers)
		}
		// Its own share (about a third) and its part of the stalled
		// node's (about a sixth): more than its own alone.
		if l.FromSource < total*2/5 {
			t.Errorf("node %d fetched %d bytes from S3 of %d: want its share and part of node %d's", k, l.FromSource, total, victim)
		}
	}
	// Split, not fetched by each: 4/3 of the dataset would be twice.
	t.Logf("nodes 0 and 1 fetched %d bytes from S3 for a dataset of %d (%.2fx)", fromSource, total, float64(fromSource)/float64(total))
}

// A node that never starts: the others wait for it a little, bypass it,
// split its share between them, and once their linger runs out exit 0,
// naming it.
func TestFleetWithoutANodeThatNeverStarts(t *testing.T) {
	s := emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory})
	const prefix, nodes, absent = "fleet/", 3, 1
	want, total := fleetDataset(t, s, prefix)
	peers := freeAddrs(t, nodes) // nothing listens at peers[absent]
	var args, env [][]string
	var dirs []string
	for k := range nodes {
		if k == absent {
			continue
		}
		dirs = append(dirs, filepath.Join(t.TempDir(), "dest"))
		args = append(args, fleetArgs(s, prefix, dirs[len(dirs)-1], k, peers, "--fleet-linger", "2s"))
		env = append(env, []string{"S3PD_FLEET_TOKEN=" + fleetToken})
	}
	var fromSource int64
	for i, r := range runAll(t, env, args) {
		if r.code != 0 {
			t.Fatalf("node %d: exit %d\nstderr: %s", i, r.code, r.stderr)
		}
		sameTree(t, dirs[i], want)
		l := fleetSummary(t, r.stdout)
		t.Logf("node %d: %d bytes from S3, %d from peers; peers %+v", *l.Node, l.FromSource, l.FromPeers, l.Peers)
		fromSource += l.FromSource
		named := false
		for _, p := range l.Peers {
			named = named || p.Node == absent && p.Bypassed && p.Reason != ""
		}
		if !named || l.FromPeers == 0 {
			t.Errorf("node %d: %d bytes from peers, peers %+v: want some from the other, node %d named as bypassed", *l.Node, l.FromPeers, l.Peers, absent)
		}
		if l.FromSource < total*2/5 {
			t.Errorf("node %d fetched %d bytes from S3 of %d: want its share and part of node %d's", *l.Node, l.FromSource, total, absent)
		}
	}
	t.Logf("the two nodes fetched %d bytes from S3 for a dataset of %d (%.2fx)", fromSource, total, float64(fromSource)/float64(total))
	if fromSource > total*115/100 {
		t.Errorf("the two nodes fetched %d bytes from S3 for a dataset of %d: want the absent share split, not fetched by each (4/3)", fromSource, total)
	}
}
