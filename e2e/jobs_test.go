package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/s3pd/s3pd/pkg/fleet"
	"github.com/s3pd/s3pd/pkg/s3emu"
)

// render fills a job template's ${NAME} values as envsubst would, and
// fails on any it does not know.
func render(t *testing.T, path string, vals map[string]string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", path))
	if err != nil {
		t.Fatal(err)
	}
	out := regexp.MustCompile(`\$\{([A-Z_]+)\}`).ReplaceAllStringFunc(string(b), func(m string) string {
		v, ok := vals[m[2:len(m)-1]]
		if !ok {
			t.Fatalf("%s: no sample value for %s", path, m)
		}
		return v
	})
	return out
}

// after returns the value of the first line after line from that starts
// with key (trimmed), and its index.
func after(t *testing.T, lines []string, from int, key string) (string, int) {
	t.Helper()
	for i := from; i < len(lines); i++ {
		if v, ok := strings.CutPrefix(strings.TrimSpace(lines[i]), key); ok {
			return strings.TrimSpace(v), i
		}
	}
	t.Fatalf("no %q after line %d", key, from+1)
	return "", 0
}

// jobFleet runs one s3pd per index with the command line a job template
// holds and checks that together they fetched every object once.
func jobFleet(t *testing.T, s *store, ds s3emu.Dataset, n int, cmdline func(dest string) []string, env func(k int) []string) {
	t.Helper()
	var dests, outs []string
	var args, envs [][]string
	for k := range n {
		dests = append(dests, t.TempDir())
		args = append(args, cmdline(dests[k]))
		envs = append(envs, append(env(k), "AWS_ENDPOINT_URL="+s.endpoint))
	}
	for k, r := range runAll(t, envs, args) {
		if r.code != 0 {
			t.Fatalf("index %d: s3pd %q: exit %d\n%s", k, args[k], r.code, r.stderr)
		}
		if id := lastShardLine(t, r.stdout).Shard.ID; id != fmt.Sprintf("%d/%d", k, n) {
			t.Fatalf("index %d took shard %s", k, id)
		}
		f := filepath.Join(t.TempDir(), "out.json")
		os.WriteFile(f, []byte(r.stdout), 0o644)
		outs = append(outs, f)
	}
	if got := syntheticTree(t, "job/", dests); int64(len(got)) != ds.Objects() {
		t.Fatalf("the fleet fetched %d objects, the dataset has %d", len(got), ds.Objects())
	}
	if r := run(t, nil, append([]string{"shards", "check"}, outs...)...); r.code != 0 {
		t.Fatalf("shards check: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

const jobDataset = "job/a:30:64KiB,job/b:6:512KiB,job/c/d:3:1MiB"

func TestKubernetesIndexedJob(t *testing.T) {
	s := emuStore(t, s3emu.Options{Dataset: jobDataset})
	ds, _ := s3emu.ParseDataset(jobDataset)
	const n = 4
	doc := render(t, "configs/k8s/indexed-job.yaml", map[string]string{"SHARDS": strconv.Itoa(n), "JOB_NAME": "pull",
		"IMAGE": "s3pd:test", "SOURCE": s.url("job/"), "DEST": "@DEST@"})
	lines := strings.Split(doc, "\n")
	if v, _ := after(t, lines, 0, "completionMode:"); v != "Indexed" {
		t.Fatalf("completionMode %q, want Indexed", v)
	}
	if v, _ := after(t, lines, 0, "completions:"); v != strconv.Itoa(n) {
		t.Fatalf("completions %q, want %d", v, n)
	}
	_, pull := after(t, lines, 0, "- name: pull")
	_, envAt := after(t, lines, pull, "- name: S3PD_SHARD_COUNT")
	count, _ := after(t, lines, envAt, "value:")
	var command, argv []string
	c, _ := after(t, lines, pull, "command:")
	a, _ := after(t, lines, pull, "args:")
	if err := json.Unmarshal([]byte(c), &command); err != nil || len(command) != 1 || command[0] != "s3pd" {
		t.Fatalf("command %s: want [\"s3pd\"] (%v)", c, err)
	}
	if err := json.Unmarshal([]byte(a), &argv); err != nil {
		t.Fatalf("args %s: %v", a, err)
	}
	jobFleet(t, s, ds, n, func(dest string) []string {
		out := append([]string(nil), argv...)
		for i := range out {
			out[i] = strings.ReplaceAll(out[i], "@DEST@", dest)
		}
		return out
	}, func(k int) []string {
		return []string{"JOB_COMPLETION_INDEX=" + strconv.Itoa(k), "S3PD_SHARD_COUNT=" + strings.Trim(count, `"`)}
	})
}

func TestSlurmArray(t *testing.T) {
	s := emuStore(t, s3emu.Options{Dataset: jobDataset})
	ds, _ := s3emu.ParseDataset(jobDataset)
	const n = 3
	doc := render(t, "configs/slurm/pull-array.sbatch", map[string]string{"SHARDS": strconv.Itoa(n), "LAST": strconv.Itoa(n - 1),
		"SOURCE": s.url("job/"), "DEST": "@DEST@"})
	lines := strings.Split(doc, "\n")
	arr, _ := after(t, lines, 0, "#SBATCH --array=")
	lo, hi, ok := strings.Cut(arr, "-")
	first, err1 := strconv.Atoi(lo)
	last, err2 := strconv.Atoi(hi)
	if !ok || err1 != nil || err2 != nil || last-first+1 != n {
		t.Fatalf("--array=%s: want %d contiguous tasks", arr, n)
	}
	line, _ := after(t, lines, 0, "s3pd get ")
	argv := append([]string{"get"}, strings.Fields(line)...)
	jobFleet(t, s, ds, n, func(dest string) []string {
		out := append([]string(nil), argv...)
		for i := range out {
			out[i] = strings.ReplaceAll(out[i], "@DEST@", dest)
		}
		return out
	}, func(k int) []string {
		return []string{"SLURM_ARRAY_TASK_ID=" + strconv.Itoa(first+k), "SLURM_ARRAY_TASK_MIN=" + lo,
			"SLURM_ARRAY_TASK_MAX=" + hi, "SLURM_ARRAY_TASK_COUNT=" + strconv.Itoa(n), "SLURM_ARRAY_JOB_ID=7"}
	})
}

// TestKubernetesFleetJob renders the fleet's Indexed Job and checks that
// its headless Service, the pods' subdomain and the environment it gives
// each pod let --fleet auto find every pod at the Service's per-pod
// DNS names and the port the pods expose.
func TestKubernetesFleetJob(t *testing.T) {
	const n = 4
	doc := render(t, "configs/k8s/fleet-job.yaml", map[string]string{"NODES": strconv.Itoa(n), "JOB_NAME": "pull",
		"IMAGE": "s3pd:test", "PORT": "7474", "SOURCE": "s3://b/job/", "DEST": "/mnt/striped/job"})
	lines := strings.Split(doc, "\n")
	if v, _ := after(t, lines, 0, "kind:"); v != "Service" {
		t.Fatalf("first kind %q, want Service", v)
	}
	svc, _ := after(t, lines, 0, "name:")
	if v, _ := after(t, lines, 0, "clusterIP:"); !strings.HasPrefix(v, "None") {
		t.Fatalf("the Service's clusterIP %q, want None (headless)", v)
	}
	if v, _ := after(t, lines, 0, "publishNotReadyAddresses:"); v != "true" {
		t.Fatalf("publishNotReadyAddresses %q, want true: a pod must be found before it is ready", v)
	}
	svcPort, _ := after(t, lines, 0, "port:")
	_, job := after(t, lines, 0, "kind: Job")
	jobName, _ := after(t, lines, job, "name:")
	if v, _ := after(t, lines, job, "completionMode:"); v != "Indexed" {
		t.Fatalf("completionMode %q, want Indexed", v)
	}
	completions, _ := after(t, lines, job, "completions:")
	parallelism, _ := after(t, lines, job, "parallelism:")
	if completions != strconv.Itoa(n) || !strings.HasPrefix(parallelism, strconv.Itoa(n)+" ") {
		t.Fatalf("completions %q, parallelism %q: want %d of each (the pods serve each other)", completions, parallelism, n)
	}
	if v, _ := after(t, lines, job, "subdomain:"); v != svc {
		t.Fatalf("subdomain %q, want the Service %q", v, svc)
	}
	_, pull := after(t, lines, job, "- name: pull")
	vars := map[string]string{}
	for _, name := range []string{"S3PD_SHARD_COUNT", "S3PD_FLEET_SERVICE"} {
		_, at := after(t, lines, pull, "- name: "+name)
		v, _ := after(t, lines, at, "value:")
		vars[name] = strings.Trim(v, `"`)
	}
	if vars["S3PD_SHARD_COUNT"] != completions || vars["S3PD_FLEET_SERVICE"] != svc {
		t.Fatalf("env %v: want S3PD_SHARD_COUNT=%s (completions), S3PD_FLEET_SERVICE=%s", vars, completions, svc)
	}
	_, tok := after(t, lines, pull, "- name: S3PD_FLEET_TOKEN")
	if _, ref := after(t, lines, tok, "secretKeyRef:"); ref != tok+2 {
		t.Fatalf("S3PD_FLEET_TOKEN does not come from a Secret")
	}
	_, ports := after(t, lines, pull, "ports:")
	containerPort, _ := after(t, lines, ports, "containerPort:")
	var argv []string
	a, _ := after(t, lines, pull, "args:")
	if err := json.Unmarshal([]byte(a), &argv); err != nil {
		t.Fatalf("args %s: %v", a, err)
	}
	line := " " + strings.Join(argv, " ") + " "
	for _, want := range []string{" --fleet auto ", " --peers auto ", " --fleet-port " + containerPort + " "} {
		if !strings.Contains(line, want) {
			t.Fatalf("args %q lack %q", argv, want)
		}
	}
	if svcPort != containerPort {
		t.Fatalf("the Service's port %s, the container's %s", svcPort, containerPort)
	}
	// s3pd takes the pod's environment: the settings do not refuse the
	// template's S3PD_* variables as typos.
	st := emuStore(t, s3emu.Options{Dataset: jobDataset})
	podEnv := []string{"JOB_COMPLETION_INDEX=1", "HOSTNAME=" + jobName + "-1",
		"S3PD_SHARD_COUNT=" + vars["S3PD_SHARD_COUNT"], "S3PD_FLEET_SERVICE=" + vars["S3PD_FLEET_SERVICE"],
		"S3PD_FLEET_TOKEN=from-the-secret"}
	if r := run(t, podEnv, st.cmd("get", "--shard", "auto", "--dry-run", "--quiet", st.url("job/"), t.TempDir())...); r.code != 0 {
		t.Fatalf("s3pd in the pod's environment: exit %d\n%s", r.code, r.stderr)
	}
	port, _ := strconv.Atoi(containerPort)
	for k := range n {
		// What Kubernetes gives pod k: its index and hostname, and the
		// template's environment.
		env := map[string]string{"JOB_COMPLETION_INDEX": strconv.Itoa(k), "HOSTNAME": fmt.Sprintf("%s-%d", jobName, k),
			"S3PD_SHARD_COUNT": vars["S3PD_SHARD_COUNT"], "S3PD_FLEET_SERVICE": vars["S3PD_FLEET_SERVICE"]}
		d, err := fleet.Discover(func(v string) string { return env[v] }, port)
		if err != nil {
			t.Fatalf("pod %d: %v", k, err)
		}
		if d.Self != k || len(d.Peers) != n || d.From != "kubernetes" {
			t.Fatalf("pod %d: discovered %+v", k, d)
		}
		for i, p := range d.Peers {
			if want := fmt.Sprintf("pull-%d.pull:7474", i); p != want {
				t.Fatalf("pod %d: peer %d is %s, want %s", k, i, p, want)
			}
		}
	}
}
