package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/s3pd/s3pd/pkg/s3emu"
)

// slurm is a real one-node Slurm cluster (scripts/ci-slurm.sh) whose
// every file lies under one temporary directory.
type slurm struct {
	dir string
	env []string // SLURM_CONF for the client commands
}

// startSlurm starts munged, slurmctld and slurmd for the test and stops
// them, by their PIDs, when it ends (cancelling any job left).
func startSlurm(t *testing.T) *slurm {
	t.Helper()
	for _, tool := range []string{"sbatch", "squeue", "scancel", "sinfo", "srun", "slurmctld", "slurmd", "munged"} {
		if _, err := exec.LookPath(tool); err != nil {
			unavailable(t, "%s is not installed (scripts/ci-slurm.sh install installs Slurm)", tool)
		}
	}
	if os.Geteuid() != 0 {
		unavailable(t, "the test's Slurm runs its daemons as root")
	}
	dir := t.TempDir()
	port := freePorts(t, "", 2)
	script := filepath.Join("..", "scripts", "ci-slurm.sh")
	s := &slurm{dir: dir, env: []string{"SLURM_CONF=" + filepath.Join(dir, "slurm.conf")}}
	t.Cleanup(func() {
		if out, err := exec.Command("sh", script, "stop", dir).CombinedOutput(); err != nil {
			t.Errorf("stop slurm: %v\n%s", err, out)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	start := exec.CommandContext(ctx, "sh", script, "start", dir)
	start.Env = append(os.Environ(), "SLURM_CI_PORT="+strconv.Itoa(port))
	if out, err := start.CombinedOutput(); err != nil {
		t.Fatalf("start slurm: %v\n%s", err, out)
	}
	return s
}

// freePorts returns the first of n consecutive TCP ports free on host
// ("" for every address).
func freePorts(t *testing.T, host string, n int) int {
	t.Helper()
	for try := 0; try < 50; try++ {
		ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			t.Fatal(err)
		}
		first := ln.Addr().(*net.TCPAddr).Port
		held := []net.Listener{ln}
		for i := 1; i < n && held != nil; i++ {
			l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(first+i)))
			if err != nil {
				for _, h := range held {
					h.Close()
				}
				held = nil
				break
			}
			held = append(held, l)
		}
		for _, h := range held {
			h.Close()
		}
		if held != nil {
			return first
		}
	}
	t.Fatalf("no %d consecutive free ports", n)
	return 0
}

// submit runs sbatch --wait with args (options, then the script) in
// workdir with env, and fails the test, with the job's logs and the
// daemons', if the job does not end well within four minutes.
func (s *slurm) submit(t *testing.T, workdir string, env []string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sbatch", append([]string{"--wait", "--chdir=" + workdir}, args...)...)
	cmd.Dir = workdir
	cmd.Env = append(append(baseEnv(t), env...), s.env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		var logs strings.Builder
		for _, pat := range []string{filepath.Join(workdir, "*.log"), filepath.Join(s.dir, "slurm*.log")} {
			files, _ := filepath.Glob(pat)
			for _, f := range files {
				b, _ := os.ReadFile(f)
				if len(b) > 4000 {
					b = b[len(b)-4000:]
				}
				fmt.Fprintf(&logs, "--- %s\n%s\n", f, b)
			}
		}
		t.Fatalf("sbatch %q: %v\n%s%s", args, err, out.String(), logs.String())
	}
}

// TestSlurmArrayJob submits configs/slurm/pull-array.sbatch for four
// shards to a real Slurm against the emulator: the four tasks together
// land every object once, and shards check says so from their --json.
func TestSlurmArrayJob(t *testing.T) {
	sl := startSlurm(t)
	s := emuStore(t, s3emu.Options{Dataset: jobDataset})
	ds, _ := s3emu.ParseDataset(jobDataset)
	const n = 4
	work, dest := t.TempDir(), t.TempDir()
	doc := render(t, "configs/slurm/pull-array.sbatch", map[string]string{"SHARDS": strconv.Itoa(n), "LAST": strconv.Itoa(n - 1),
		"SOURCE": s.url("job/"), "DEST": dest})
	if err := os.WriteFile(filepath.Join(work, "pull.sbatch"), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	// The job inherits the submitting environment (sbatch's --export=ALL):
	// s3pd on the PATH, the emulator as the endpoint.
	sl.submit(t, work, []string{"PATH=" + filepath.Dir(bin) + ":" + os.Getenv("PATH"), "AWS_ENDPOINT_URL=" + s.endpoint},
		"pull.sbatch")
	var outs []string
	for k := range n {
		f := filepath.Join(work, fmt.Sprintf("s3pd-shard-%d.json", k))
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatalf("task %d: %v", k, err)
		}
		if id := lastShardLine(t, string(b)).Shard.ID; id != fmt.Sprintf("%d/%d", k, n) {
			t.Fatalf("task %d took shard %s", k, id)
		}
		outs = append(outs, f)
	}
	if got := syntheticTree(t, "job/", []string{dest}); int64(len(got)) != ds.Objects() {
		t.Fatalf("the job landed %d objects, the dataset has %d", len(got), ds.Objects())
	}
	r := run(t, nil, append([]string{"shards", "check"}, outs...)...)
	if r.code != 0 || !strings.HasPrefix(r.stdout, fmt.Sprintf("ok: %d shards cover listing", n)) {
		t.Fatalf("shards check: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestSlurmDiscover runs fleet.Discover (testdata/fleetdiscover) in a
// real Slurm job of four tasks on the one node: under srun each task
// finds itself and the four addresses, one port a task; a step of two
// tasks finds two; the batch script itself, which is not a task of a
// step, is refused.
func TestSlurmDiscover(t *testing.T) {
	sl := startSlurm(t)
	work, tools := t.TempDir(), t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(tools, "fleetdiscover"), "./testdata/fleetdiscover")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build fleetdiscover: %v\n%s", err, out)
	}
	const port = 7000
	script := fmt.Sprintf(`#!/bin/bash
#SBATCH --ntasks=4
#SBATCH --output=batch.log
set -euo pipefail
fleetdiscover %[1]d > batch.json
srun --distribution=block --output=four-%%t.json fleetdiscover %[1]d
srun --ntasks=2 --output=two-%%t.json fleetdiscover %[1]d
`, port)
	if err := os.WriteFile(filepath.Join(work, "discover.sbatch"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	sl.submit(t, work, []string{"PATH=" + tools + ":" + os.Getenv("PATH")}, "--overcommit", "discover.sbatch")
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	host, _, _ = strings.Cut(host, ".") // Slurm's node is named by hostname -s
	type found struct {
		Self  int
		Peers []string
		From  string
		Err   string
	}
	read := func(name string) found {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(work, name))
		if err != nil {
			t.Fatal(err)
		}
		var f found
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatalf("%s: %q: %v", name, b, err)
		}
		return f
	}
	if f := read("batch.json"); !strings.Contains(f.Err, "SLURM_STEP_ID is not set") {
		t.Errorf("the batch script discovered %+v, want SLURM_STEP_ID refused", f)
	}
	for _, step := range []struct {
		name  string
		tasks int
	}{{"four", 4}, {"two", 2}} {
		var want []string
		for j := range step.tasks {
			want = append(want, net.JoinHostPort(host, strconv.Itoa(port+j)))
		}
		for k := range step.tasks {
			f := read(fmt.Sprintf("%s-%d.json", step.name, k))
			if f.Err != "" || f.Self != k || f.From != "slurm" || strings.Join(f.Peers, ",") != strings.Join(want, ",") {
				t.Errorf("%s tasks, task %d discovered %+v, want self %d of %v from slurm", step.name, k, f, k, want)
			}
		}
	}
}

// slurmFleetSummary is what TestSlurmFleetJob reads of a fleet node's summary.
type slurmFleetSummary struct {
	FleetNode            *int  `json:"fleet_node"`
	FleetNodes           int   `json:"fleet_nodes"`
	FleetBytesFromSource int64 `json:"fleet_bytes_from_source"`
	FleetBytesFromPeers  int64 `json:"fleet_bytes_from_peers"`
}

// TestSlurmFleetJob submits configs/slurm/fleet.sbatch as four tasks on
// the one node (each task's port from its index on the node) against
// the emulator: every task lands the whole prefix, the tasks found each
// other (bytes came from peers), and S3 sent at most two copies of the
// dataset (about one; four without the fleet).
func TestSlurmFleetJob(t *testing.T) {
	sl := startSlurm(t)
	s := emuStore(t, s3emu.Options{Dataset: jobDataset})
	ds, _ := s3emu.ParseDataset(jobDataset)
	const n = 4
	work, root, wrap := t.TempDir(), t.TempDir(), t.TempDir()
	token := filepath.Join(work, "token")
	if err := os.WriteFile(token, []byte("fleet-token-of-the-test\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	port := freePorts(t, "127.0.0.1", n)
	doc := render(t, "configs/slurm/fleet.sbatch", map[string]string{"NODES": strconv.Itoa(n), "SOURCE": s.url("job/"),
		"DEST": "@DEST@", "TOKEN_FILE": token, "PORT": strconv.Itoa(port)})
	if err := os.WriteFile(filepath.Join(work, "fleet.sbatch"), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	// One node stands for four here, so each task lands in a DEST of its
	// own: the s3pd on the job's PATH puts ROOT/node-K for @DEST@ and
	// runs the real binary with the rest of the command line as it is.
	wrapper := fmt.Sprintf("#!/bin/sh\nfor a do\n\tshift\n\t[ \"$a\" = @DEST@ ] && a=%s/node-$SLURM_PROCID\n\tset -- \"$@\" \"$a\"\ndone\nexec %s \"$@\"\n", root, bin)
	if err := os.WriteFile(filepath.Join(wrap, "s3pd"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	// The template asks for NODES nodes, one task on each; the one node
	// here takes all four, on two CPUs.
	sl.submit(t, work, []string{"PATH=" + wrap + ":" + os.Getenv("PATH"), "AWS_ENDPOINT_URL=" + s.endpoint},
		"--nodes=1", "--overcommit", "fleet.sbatch")
	total := ds.Bytes()
	var fromPeers int64
	for k := range n {
		b, err := os.ReadFile(filepath.Join(work, fmt.Sprintf("s3pd-fleet-%d.json", k)))
		if err != nil {
			t.Fatalf("task %d: %v", k, err)
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		var l slurmFleetSummary
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &l); err != nil || l.FleetNode == nil {
			t.Fatalf("task %d: last line %q: %v (no fleet_node)", k, lines[len(lines)-1], err)
		}
		if *l.FleetNode != k || l.FleetNodes != n {
			t.Fatalf("task %d: fleet node %d of %d, want %d of %d", k, *l.FleetNode, l.FleetNodes, k, n)
		}
		if got := l.FleetBytesFromSource + l.FleetBytesFromPeers; got < total {
			t.Errorf("task %d: %d bytes from S3 and peers, the dataset has %d", k, got, total)
		}
		fromPeers += l.FleetBytesFromPeers
		dest := filepath.Join(root, fmt.Sprintf("node-%d", k))
		if got := syntheticTree(t, "job/", []string{dest}); int64(len(got)) != ds.Objects() {
			t.Errorf("task %d landed %d objects, the dataset has %d", k, len(got), ds.Objects())
		}
	}
	if fromPeers == 0 {
		t.Errorf("no task took a byte from a peer")
	}
	sent := s.emu.Stats().BytesSent
	if sent > 2*total { // about one copy; four without the fleet
		t.Errorf("S3 sent %d bytes, more than two copies of the dataset's %d", sent, total)
	}
	t.Logf("S3 sent %d bytes (%.2f datasets), peers %d", sent, float64(sent)/float64(total), fromPeers)
}
