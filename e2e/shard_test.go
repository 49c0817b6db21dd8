package e2e

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
	"time"

	"github.com/s3pd/s3pd/pkg/s3emu"
)

// runAll starts one s3pd per argument list at once and waits for all.
func runAll(t *testing.T, env [][]string, args [][]string) []result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmds := make([]*exec.Cmd, len(args))
	outs := make([][2]*bytes.Buffer, len(args))
	for i, a := range args {
		c := exec.CommandContext(ctx, bin, a...)
		c.Env = baseEnv(t)
		if env != nil {
			c.Env = append(c.Env, env[i]...)
		}
		outs[i] = [2]*bytes.Buffer{{}, {}}
		c.Stdout, c.Stderr = outs[i][0], outs[i][1]
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i] = c
	}
	res := make([]result, len(args))
	for i, c := range cmds {
		err := c.Wait()
		res[i] = result{stdout: outs[i][0].String(), stderr: outs[i][1].String()}
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee):
			res[i].code = ee.ExitCode()
		case err != nil:
			t.Fatalf("run s3pd %v: %v", args[i], err)
		}
	}
	return res
}

// shardLine is what the tests read of a --json summary with a shard.
type shardLine struct {
	Type               string `json:"type"`
	Bytes              int64  `json:"bytes"`
	Retries            int64  `json:"retries"`
	Hedged             int64  `json:"hedged"`
	Failed             int64  `json:"failed"`
	WouldTransfer      int64  `json:"would_transfer"`
	WouldTransferBytes int64  `json:"would_transfer_bytes"`
	Shard              *struct {
		Version        int     `json:"version"`
		ID             string  `json:"id"`
		Objects        int64   `json:"objects"`
		Bytes          int64   `json:"bytes"`
		Share          float64 `json:"share"`
		ListingObjects int64   `json:"listing_objects"`
		ListingBytes   int64   `json:"listing_bytes"`
		ListingUnsized int64   `json:"listing_unsized"`
		Unsized        int64   `json:"unsized"`
		ListingHash    string  `json:"listing_hash"`
		Hash           string  `json:"hash"`
		Whole          int64   `json:"whole"`
	} `json:"shard"`
}

// objectStatus maps each key of a run's --json object lines to its
// status.
func objectStatus(t *testing.T, stdout string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var o struct{ Type, Key, Status string }
		if err := json.Unmarshal([]byte(line), &o); err != nil {
			t.Fatalf("--json line %q: %v", line, err)
		}
		if o.Type == "object" {
			out[o.Key] = o.Status
		}
	}
	return out
}

// offEven is how far a shard's bytes are from an even share, as a
// fraction of it.
func offEven(l shardLine, n int) float64 {
	return float64(l.Shard.Bytes)/float64(l.Shard.ListingBytes)*float64(n) - 1
}

// lastShardLine parses the last JSON line of a run's stdout.
func lastShardLine(t *testing.T, stdout string) shardLine {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	var l shardLine
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &l); err != nil || l.Shard == nil {
		t.Fatalf("last line %q: %v (no shard)", lines[len(lines)-1], err)
	}
	return l
}

// saveOutputs writes each run's stdout to a file and returns their
// paths, for shards check.
func saveOutputs(t *testing.T, res []result) []string {
	t.Helper()
	dir := t.TempDir()
	var out []string
	for k, r := range res {
		f := filepath.Join(dir, fmt.Sprintf("shard-%d.json", k))
		if err := os.WriteFile(f, []byte(r.stdout), 0o644); err != nil {
			t.Fatal(err)
		}
		out = append(out, f)
	}
	return out
}

// syntheticTree checks that every file under dirs is its synthetic
// object (key = prefix + name) and returns which dir holds each name.
func syntheticTree(t *testing.T, prefix string, dirs []string) map[string]int {
	t.Helper()
	where := map[string]int{}
	for i, d := range dirs {
		err := filepath.WalkDir(d, func(p string, e os.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return err
			}
			got, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(d, p)
			name := filepath.ToSlash(rel)
			want := make([]byte, len(got))
			s3emu.SyntheticBytes(prefix+name, 0, want)
			if !bytes.Equal(got, want) {
				t.Errorf("%s in DEST %d: content differs from the object", name, i)
			}
			if j, ok := where[name]; ok {
				t.Errorf("%s is in DEST %d and DEST %d", name, j, i)
			}
			where[name] = i
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return where
}

// TestShardsTogetherFetchEveryObjectOnce runs four shards at once over
// an eighth of the mix of 100 x 1 MiB, 40 x 4, 10 x 16 and 4 x 64 MiB
// (84.5 MiB): each gets within 2% of a quarter, the DESTs hold every
// object once, byte-exact, and shards check agrees.
func TestShardsTogetherFetchEveryObjectOnce(t *testing.T) {
	const dataset = "mix/a:100:128KiB,mix/b:40:512KiB,mix/c:10:2MiB,mix/d:4:8MiB"
	s := emuStore(t, s3emu.Options{Dataset: dataset})
	ds, err := s3emu.ParseDataset(dataset)
	if err != nil {
		t.Fatal(err)
	}
	const n = 4
	var args [][]string
	var dests, outs []string
	for k := range n {
		dests = append(dests, t.TempDir())
		args = append(args, s.cmd("get", "--json", "--partsize", "1MiB", "--shard", fmt.Sprintf("%d/%d", k, n), s.url("mix/"), dests[k]))
	}
	res := runAll(t, nil, args)
	var sum, retries int64
	for k, r := range res {
		if r.code != 0 {
			t.Fatalf("shard %d/%d: exit %d\n%s", k, n, r.code, r.stderr)
		}
		l := lastShardLine(t, r.stdout)
		if l.Shard.ID != fmt.Sprintf("%d/%d", k, n) || l.Shard.ListingObjects != ds.Objects() || l.Shard.ListingBytes != ds.Bytes() {
			t.Fatalf("shard %d summary %+v, want id %d/%d over %d objects, %d bytes", k, *l.Shard, k, n, ds.Objects(), ds.Bytes())
		}
		if l.Bytes != l.Shard.Bytes {
			t.Errorf("shard %d moved %d bytes, its share is %d", k, l.Bytes, l.Shard.Bytes)
		}
		if dev := offEven(l, n); dev > 0.02 || dev < -0.02 {
			t.Errorf("shard %d/%d: %d bytes, %.2f%% off a quarter, want within 2%%", k, n, l.Shard.Bytes, dev*100)
		}
		sum += l.Shard.Bytes
		retries += l.Retries + l.Hedged // a range taken over is asked for again too
		f := filepath.Join(t.TempDir(), fmt.Sprintf("shard-%d.json", k))
		if err := os.WriteFile(f, []byte(r.stdout), 0o644); err != nil {
			t.Fatal(err)
		}
		outs = append(outs, f)
	}
	if sum != ds.Bytes() {
		t.Fatalf("the shards' bytes add up to %d, the dataset has %d", sum, ds.Bytes())
	}
	where := syntheticTree(t, "mix/", dests)
	if int64(len(where)) != ds.Objects() {
		t.Fatalf("the DESTs hold %d objects, the dataset %d", len(where), ds.Objects())
	}
	// The server sent each object's bytes once (no retries or takeovers
	// were reported).
	for name := range where {
		size, _ := ds.Lookup("mix/" + name)
		if sent := s.emu.BytesSentFor(s.bucket, "mix/"+name); sent != size && retries == 0 {
			t.Errorf("mix/%s: the server sent %d bytes of %d", name, sent, size)
		}
	}

	r := run(t, nil, "shards", "check", outs[0], outs[1], outs[2], outs[3])
	if r.code != 0 || !strings.Contains(r.stdout, "ok: 4 shards") {
		t.Fatalf("shards check of the fleet: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = run(t, nil, "shards", "check", outs[0], outs[1], outs[3])
	if r.code != 1 || !strings.Contains(r.stdout, "missing shard 2/4") {
		t.Fatalf("shards check without shard 2: exit %d, want 1 naming it\n%s%s", r.code, r.stdout, r.stderr)
	}

	// The same command twice gives the same split; a rerun fetches nothing new.
	again := run(t, nil, args[2]...)
	if again.code != 0 {
		t.Fatalf("rerun of shard 2: exit %d\n%s", again.code, again.stderr)
	}
	if a, b := lastShardLine(t, res[2].stdout).Shard, lastShardLine(t, again.stdout).Shard; *a != *b {
		t.Fatalf("rerun of shard 2 split differently: %+v then %+v", *a, *b)
	}
}

func TestShardFlagErrors(t *testing.T) {
	s := emuStore(t, s3emu.Options{Dataset: "d:3:1KiB"})
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"K equal to N", nil, []string{"--shard", "4/4"}, "0 <= K < N"},
		{"not a fraction", nil, []string{"--shard", "two"}, "want K/N"},
		{"auto with nothing set", nil, []string{"--shard", "auto"}, "neither"},
		{"auto with half of Kubernetes", []string{"JOB_COMPLETION_INDEX=1"}, []string{"--shard", "auto"}, "S3PD_SHARD_COUNT is not set"},
		{"auto with a Slurm step", []string{"SLURM_ARRAY_TASK_ID=2", "SLURM_ARRAY_TASK_MIN=0", "SLURM_ARRAY_TASK_MAX=4", "SLURM_ARRAY_TASK_COUNT=3", "SLURM_ARRAY_TASK_STEP=2"}, []string{"--shard", "auto"}, "step"},
		{"with --delete", nil, []string{"--shard", "0/2", "--delete"}, "--delete with --shard"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(s.cmd("get"), tc.args...)
			args = append(args, s.url("d/"), t.TempDir())
			r := run(t, tc.env, args...)
			if r.code != 2 || !strings.Contains(r.stderr, tc.want) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
				t.Fatalf("exit %d, stderr %q; want exit 2 and one line with %q", r.code, r.stderr, tc.want)
			}
		})
	}
	// auto from a Slurm array numbered from 1.
	dest := t.TempDir()
	r := run(t, []string{"SLURM_ARRAY_TASK_ID=3", "SLURM_ARRAY_TASK_MIN=1", "SLURM_ARRAY_TASK_MAX=3", "SLURM_ARRAY_TASK_COUNT=3"},
		append(s.cmd("get", "--json", "--shard", "auto"), s.url("d/"), dest)...)
	if r.code != 0 || lastShardLine(t, r.stdout).Shard.ID != "2/3" {
		t.Fatalf("auto under Slurm: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestShardsCheckNamesIncompleteShards: a fleet whose shards all ran
// passes shards check; each way a shard can end without its objects (an
// interrupt, a dry run, an error before or after its summary, no summary
// at all) fails it with exit 1 and a line naming the shard or its file.
func TestShardsCheckNamesIncompleteShards(t *testing.T) {
	s := emuStore(t, s3emu.Options{Dataset: "s/a:2:16MiB,s/b:2:1MiB", ConnRate: 1 << 20})
	shardArgs := func(k int, dest string, extra ...string) []string {
		return append(s.cmd("get", append([]string{"--json", "--partsize", "1MiB", "--shard", fmt.Sprintf("%d/2", k)}, extra...)...), s.url("s/"), dest)
	}
	good := saveOutputs(t, runAll(t, nil, [][]string{shardArgs(0, t.TempDir()), shardArgs(1, t.TempDir())}))
	if r := run(t, nil, "shards", "check", good[0], good[1]); r.code != 0 || !strings.Contains(r.stdout, "ok: 2 shards") {
		t.Fatalf("shards check of a complete fleet: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// Shard 0 interrupted once its 16 MiB object is under way, two
	// parts at a time (at 1 MiB/s a connection).
	dest := t.TempDir()
	c := exec.Command(bin, shardArgs(0, dest, "--threads", "2")...)
	c.Env = baseEnv(t)
	var stdout bytes.Buffer
	c.Stdout = &stdout
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	waitForJournal(t, dest)
	c.Process.Signal(os.Interrupt)
	c.Wait()
	if code := c.ProcessState.ExitCode(); code != 130 {
		t.Fatalf("interrupted shard: exit %d, want 130", code)
	}
	interrupted := saveOutputs(t, []result{{stdout: stdout.String()}})[0]

	dry := run(t, nil, shardArgs(0, t.TempDir(), "--dry-run")...)
	failed := run(t, nil, append(s.cmd("get", "--json", "--shard", "0/2"), "s3://no-such-bucket/s/", t.TempDir())...)
	if dry.code != 0 || failed.code == 0 {
		t.Fatalf("dry run: exit %d; run of a missing bucket: exit %d", dry.code, failed.code)
	}
	goodOut, err := os.ReadFile(good[0])
	if err != nil {
		t.Fatal(err)
	}
	errorAfter := string(goodOut) + `{"schema":"s3pd/1","type":"error","error":"write /nvme/s/x: no space left on device","error_code":"LocalIOError","exit_code":1}` + "\n"
	outs := saveOutputs(t, []result{dry, failed, {stdout: errorAfter}, {stdout: ""}})
	for _, tc := range []struct {
		name, file string
		want       []string
	}{
		{"interrupted", interrupted, []string{"shard 0/2 (" + interrupted + "): interrupted"}},
		{"dry run", outs[0], []string{"shard 0/2 (" + outs[0] + "): a dry run"}},
		{"failed before its summary", outs[1], []string{outs[1] + ": the run failed before its summary", "missing shard 0/2"}},
		{"error after its summary", outs[2], []string{"shard 0/2 (" + outs[2] + "): an error after its summary (exit 1): write /nvme/s/x"}},
		{"no summary", outs[3], []string{outs[3] + ": no --json summary", "missing shard 0/2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, nil, "shards", "check", tc.file, good[1])
			if r.code != 1 || strings.Contains(r.stdout, "ok:") {
				t.Fatalf("exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stdout, w) {
					t.Errorf("stdout %q lacks %q", r.stdout, w)
				}
			}
		})
	}
}
