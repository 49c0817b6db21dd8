package fleet

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/s3pd/s3pd/internal/testenv"
)

func TestExpandHostlist(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // space-separated
	}{
		{"vm", "vm"},
		{"login1", "login1"},
		{"node[01-03,07],gpu-a[1-2],login1", "node01 node02 node03 node07 gpu-a1 gpu-a2 login1"},
		{"node[1-3]", "node1 node2 node3"},
		{"node[8-11]", "node8 node9 node10 node11"},
		{"node[08-11]", "node08 node09 node10 node11"},
		{"node[098-101]", "node098 node099 node100 node101"},
		{"node[0]", "node0"},
		{"n[7,3,5]", "n7 n3 n5"}, // the order given, as Slurm writes it
		{"a1,a2,b[1-2]", "a1 a2 b1 b2"},
		{"rack[1-2]-n[01-02]", "rack1-n01 rack1-n02 rack2-n01 rack2-n02"},
		{"a[1-2]b[3-4]", "a1b3 a1b4 a2b3 a2b4"},
		{"[1-2]", "1 2"},
		{"ip-10-0-1-[5-6]", "ip-10-0-1-5 ip-10-0-1-6"},
		{"a.b[1-2]", "a.b1 a.b2"},
		{"node[00-02]", "node00 node01 node02"},
		{"n[009-010]", "n009 n010"},
		{"node[01-3]", "node01 node02 node03"},
		{"node[1-03]", "node1 node2 node3"},
		{"n[1,3-4,07]", "n1 n3 n4 n07"},
	} {
		got, err := expandHostlist(tc.in)
		if err != nil || strings.Join(got, " ") != tc.want {
			t.Errorf("expandHostlist(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

// TestExpandHostlistAgreesWithSlurm compares expandHostlist with Slurm's
// own expander (scontrol show hostnames), on lists Slurm takes and on
// lists it refuses.
func TestExpandHostlistAgreesWithSlurm(t *testing.T) {
	scontrol, err := exec.LookPath("scontrol")
	if err != nil {
		testenv.Unavailable(t, "scontrol is not installed (scripts/ci-slurm.sh install installs Slurm)")
	}
	// scontrol reads a configuration before it expands anything, though
	// it contacts no controller for this.
	conf := filepath.Join(t.TempDir(), "slurm.conf")
	if err := os.WriteFile(conf, []byte("ClusterName=x\nSlurmctldHost=localhost\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, list := range []string{
		"vm", "node[01-03,07],gpu-a[1-2],login1", "node[8-11]", "node[098-101]", "n[7,3,5]",
		"rack[1-2]-n[01-02]", "a[1-2]b[3-4]", "[1-2]", "ip-10-0-1-[5-6]", "a.b[1-2]", "node[00-02]",
		"n[009-010]", "node[01-3]", "node[1-03]", "n[1,3-4,07]", "x[0]", "gpu[1-16]",
		// refused by both
		"cn[1-2]-ib", "[1-2]x", "a[1-2]b[3]c", "n[1-2]]", "n[[1-2]]", "node[3-1]", "node[]", "n[a]",
		"n[1-2-3]", "n[-1]", "n[1,]", "n[,1]", "node[0-70000]",
	} {
		cmd := exec.Command(scontrol, "show", "hostnames", list)
		cmd.Env = append(os.Environ(), "SLURM_CONF="+conf)
		out, err := cmd.CombinedOutput()
		slurmOK := err == nil && !strings.Contains(string(out), "Invalid hostlist")
		got, myErr := expandHostlist(list)
		switch {
		case slurmOK != (myErr == nil):
			t.Errorf("%q: Slurm says %q (%v), expandHostlist %q, %v", list, out, err, got, myErr)
		case slurmOK && strings.Join(got, "\n") != strings.TrimSpace(string(out)):
			t.Errorf("%q: Slurm expands to %q, expandHostlist to %q", list, strings.Fields(string(out)), got)
		}
	}
}

func TestExpandHostlistRefuses(t *testing.T) {
	for _, tc := range []struct{ in, err string }{
		{"", "empty host list"},
		{"  ", "empty host list"},
		{"a,,b", "an empty name"},
		{",a", "an empty name"},
		{"a,", "an empty name"},
		{"node[1-3", "without its ']'"},
		{"node1-3]", "without its '['"},
		{"node]1[", "without its '['"},
		{"node[1-3]]", `"]" after the last ']'`},
		{"node[[1-3]]", "brackets inside brackets"},
		{"node[1-[2]]", "brackets inside brackets"},
		{"node[]", "empty brackets"},
		{"node[1,]", `range ""`},
		{"node[,1]", `range ""`},
		{"node[3-1]", "runs backwards"},
		{"node[a-b]", "whole numbers"},
		{"node[1-]", "whole numbers"},
		{"node[-1]", "whole numbers"},
		{"node[1-2-3]", "whole numbers"},
		{"node[ 1]", "holds a space"},
		{"node 1", "holds a space"},
		{"node[+1]", "whole numbers"},
		{"node[0-70000]", "more than 65536 hosts"},
		{"a[0-300]b[0-300]", "more than 65536 hosts"},
		{"node[99999999999999999999]", "numbers too large"},
		{"cn[1-2]-ib", `"-ib" after the last ']'`},
		{"[1-2]x", `"x" after the last ']'`},
		{"a[1-2]b[3]c", `"c" after the last ']'`},
		{"node-[001-002].cluster", "after the last ']'"},
	} {
		got, err := expandHostlist(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("expandHostlist(%q) = %q, %v; want an error with %q", tc.in, got, err, tc.err)
		} else if strings.Contains(err.Error(), "\n") {
			t.Errorf("expandHostlist(%q): error of more than one line: %q", tc.in, err)
		}
	}
}

func TestExpandTasksPerNode(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
	}{
		{"1", []int{1}},
		{"4", []int{4}},
		{"2(x3),1", []int{2, 2, 2, 1}},
		{"1(x2),3,2(x2)", []int{1, 1, 3, 2, 2}},
		{"16(x1)", []int{16}},
	} {
		got, err := expandTasksPerNode(tc.in)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("expandTasksPerNode(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "0", "2(x0)", "(x3)", "2(x)", "2(x3", "2x3", "2(3)", "a", "2,,1", "2,", "-1", "2(x3)1", "1 ,2", "2(x99999)"} {
		if got, err := expandTasksPerNode(bad); err == nil {
			t.Errorf("expandTasksPerNode(%q) = %v, want an error", bad, got)
		}
	}
}

// slurmTask is the environment srun gives task procid of a job step
// over nodes with tasks per node, laid out in block order.
func slurmTask(nodes, tasks string, ntasks, procid, nodeid, localid int) map[string]string {
	return map[string]string{
		"SLURM_JOB_ID": "42", "SLURM_STEP_ID": "0", "SLURM_DISTRIBUTION": "block",
		"SLURM_JOB_NODELIST": nodes, "SLURM_NODELIST": nodes, "SLURM_STEP_NODELIST": nodes,
		"SLURM_TASKS_PER_NODE": tasks, "SLURM_STEP_TASKS_PER_NODE": tasks,
		"SLURM_NTASKS": fmt.Sprint(ntasks), "SLURM_PROCID": fmt.Sprint(procid),
		"SLURM_NODEID": fmt.Sprint(nodeid), "SLURM_LOCALID": fmt.Sprint(localid),
	}
}

// with returns env with the changes: a value "" removes the variable.
func with(env map[string]string, kv ...string) map[string]string {
	out := map[string]string{}
	for k, v := range env {
		out[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == "" {
			delete(out, kv[i])
		} else {
			out[kv[i]] = kv[i+1]
		}
	}
	return out
}

func k8sPod(index, count int, job, service string) map[string]string {
	return map[string]string{
		"JOB_COMPLETION_INDEX": fmt.Sprint(index), "S3PD_SHARD_COUNT": fmt.Sprint(count),
		"S3PD_FLEET_SERVICE": service, "HOSTNAME": fmt.Sprintf("%s-%d", job, index),
	}
}

func TestDiscover(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		port int
		want Discovered
	}{
		{"kubernetes", k8sPod(2, 4, "pull", "pull-peers"), 7373, Discovered{2, []string{
			"pull-0.pull-peers:7373", "pull-1.pull-peers:7373", "pull-2.pull-peers:7373", "pull-3.pull-peers:7373"}, "kubernetes"}},
		{"kubernetes, a job name with dashes and digits", k8sPod(0, 2, "pull-2-x", "svc.ns.svc.cluster.local."), 9000, Discovered{0, []string{
			"pull-2-x-0.svc.ns.svc.cluster.local:9000", "pull-2-x-1.svc.ns.svc.cluster.local:9000"}, "kubernetes"}},
		{"kubernetes, index 10", k8sPod(10, 11, "j", "s"), 7373, Discovered{10, []string{
			"j-0.s:7373", "j-1.s:7373", "j-2.s:7373", "j-3.s:7373", "j-4.s:7373", "j-5.s:7373",
			"j-6.s:7373", "j-7.s:7373", "j-8.s:7373", "j-9.s:7373", "j-10.s:7373"}, "kubernetes"}},
		{"kubernetes, one node", k8sPod(0, 1, "solo", "s"), 1, Discovered{0, []string{"solo-0.s:1"}, "kubernetes"}},
		{"slurm, one task per node", slurmTask("node[01-03,07]", "1(x4)", 4, 2, 2, 0), 7373, Discovered{2, []string{
			"node01:7373", "node02:7373", "node03:7373", "node07:7373"}, "slurm"}},
		{"slurm, several tasks per node", slurmTask("node[01-03],login1", "2(x3),1", 7, 3, 1, 1), 7373, Discovered{3, []string{
			"node01:7373", "node01:7374", "node02:7373", "node02:7374", "node03:7373", "node03:7374", "login1:7373"}, "slurm"}},
		{"slurm, four tasks on one node", slurmTask("vm", "4", 4, 0, 0, 0), 7000, Discovered{0, []string{
			"vm:7000", "vm:7001", "vm:7002", "vm:7003"}, "slurm"}},
		{"slurm, the last task", slurmTask("gpu-a[1-2],login1", "1,2,1", 4, 3, 2, 0), 7373, Discovered{3, []string{
			"gpu-a1:7373", "gpu-a2:7373", "gpu-a2:7374", "login1:7373"}, "slurm"}},
		{"slurm, the step's nodes over the job's", with(slurmTask("n[1-4]", "1(x4)", 2, 1, 1, 0),
			"SLURM_STEP_NODELIST", "n[1-2]", "SLURM_STEP_TASKS_PER_NODE", "1(x2)"), 7373, Discovered{1, []string{"n1:7373", "n2:7373"}, "slurm"}},
		{"slurm, no step layout: the job's", with(slurmTask("n[1-2]", "1(x2)", 2, 0, 0, 0),
			"SLURM_STEP_NODELIST", "", "SLURM_STEP_TASKS_PER_NODE", ""), 7373, Discovered{0, []string{"n1:7373", "n2:7373"}, "slurm"}},
		{"slurm, no node or local id", with(slurmTask("n[1-2]", "2(x2)", 4, 3, 0, 0),
			"SLURM_NODEID", "", "SLURM_LOCALID", ""), 7373, Discovered{3, []string{"n1:7373", "n1:7374", "n2:7373", "n2:7374"}, "slurm"}},
		{"slurm, ports up to 65535", slurmTask("n1", "2", 2, 1, 0, 1), 65534, Discovered{1, []string{"n1:65534", "n1:65535"}, "slurm"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Discover(func(k string) string { return tc.env[k] }, tc.port)
			if err != nil {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
			if got.Self != tc.want.Self || got.From != tc.want.From || !slices.Equal(got.Peers, tc.want.Peers) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestDiscoverRefuses(t *testing.T) {
	pod := k8sPod(1, 3, "pull", "peers")
	task := slurmTask("node[01-02]", "2(x2)", 4, 1, 0, 1)
	for _, tc := range []struct {
		name string
		env  map[string]string
		port int
		err  string
	}{
		{"neither", map[string]string{"HOME": "/root"}, 7373, "neither JOB_COMPLETION_INDEX"},
		{"both", with(pod, "SLURM_PROCID", "0"), 7373, "both Kubernetes"},
		{"both, by the node list", with(pod, "SLURM_JOB_NODELIST", "n1"), 7373, "both Kubernetes"},
		{"port 0", pod, 0, "port 0 is not in [1, 65535]"},
		{"port too large", task, 65536, "port 65536"},

		{"kubernetes without index", with(pod, "JOB_COMPLETION_INDEX", ""), 7373, "JOB_COMPLETION_INDEX is not set"},
		{"kubernetes without count", with(pod, "S3PD_SHARD_COUNT", ""), 7373, "S3PD_SHARD_COUNT is not set"},
		{"kubernetes count alone", map[string]string{"S3PD_SHARD_COUNT": "3"}, 7373, "JOB_COMPLETION_INDEX is not set"},
		{"kubernetes without service", with(pod, "S3PD_FLEET_SERVICE", ""), 7373, "S3PD_FLEET_SERVICE is not set"},
		{"kubernetes service alone", map[string]string{"S3PD_FLEET_SERVICE": "peers"}, 7373, "JOB_COMPLETION_INDEX is not set"},
		{"kubernetes bad service", with(pod, "S3PD_FLEET_SERVICE", "peers..x"), 7373, `S3PD_FLEET_SERVICE="peers..x" is not a DNS name`},
		{"kubernetes service with a port", with(pod, "S3PD_FLEET_SERVICE", "peers:80"), 7373, "is not a DNS name"},
		{"kubernetes without hostname", with(pod, "HOSTNAME", ""), 7373, "HOSTNAME is not set"},
		{"kubernetes hostname of another index", with(pod, "HOSTNAME", "pull-2"), 7373, `HOSTNAME="pull-2" is not JOB-NAME-1`},
		{"kubernetes hostname of a plain pod", with(pod, "HOSTNAME", "pull-7d9f-x1"), 7373, "is not JOB-NAME-1"},
		{"kubernetes hostname of index alone", with(pod, "HOSTNAME", "-1"), 7373, "is not JOB-NAME-1"},
		{"kubernetes hostname with a suffix of the index", with(pod, "HOSTNAME", "pull-11"), 7373, "is not JOB-NAME-1"},
		{"kubernetes index past count", with(pod, "JOB_COMPLETION_INDEX", "3", "HOSTNAME", "pull-3"), 7373, "JOB_COMPLETION_INDEX=3 is not in [0, S3PD_SHARD_COUNT=3)"},
		{"kubernetes negative index", with(pod, "JOB_COMPLETION_INDEX", "-1", "HOSTNAME", "pull--1"), 7373, "is not in [0"},
		{"kubernetes index garbage", with(pod, "JOB_COMPLETION_INDEX", "one"), 7373, `JOB_COMPLETION_INDEX="one" is not a whole number`},
		{"kubernetes count zero", with(pod, "S3PD_SHARD_COUNT", "0"), 7373, "is not in [0, S3PD_SHARD_COUNT=0)"},
		{"kubernetes count huge", with(pod, "S3PD_SHARD_COUNT", "100000"), 7373, "more than 65536 nodes"},

		{"slurm job array", with(task, "SLURM_ARRAY_TASK_ID", "1"), 7373, "SLURM_ARRAY_TASK_ID=1: the tasks of a Slurm job array are separate jobs"},
		{"slurm array task alone", map[string]string{"SLURM_ARRAY_TASK_ID": "1"}, 7373, "job array"},
		{"slurm batch script", with(task, "SLURM_STEP_ID", "", "SLURM_STEP_NODELIST", "", "SLURM_STEP_TASKS_PER_NODE", ""), 7373, "SLURM_STEP_ID is not set: this is not a task of a job step"},
		{"slurm node list alone", map[string]string{"SLURM_JOB_NODELIST": "n[1-2]"}, 7373, "SLURM_STEP_ID is not set"},
		{"slurm without procid", with(task, "SLURM_PROCID", ""), 7373, "SLURM_PROCID is not set"},
		{"slurm without ntasks", with(task, "SLURM_NTASKS", ""), 7373, "SLURM_NTASKS is not set"},
		{"slurm procid garbage", with(task, "SLURM_PROCID", "1a"), 7373, `SLURM_PROCID="1a" is not a whole number`},
		{"slurm procid past ntasks", with(task, "SLURM_PROCID", "4"), 7373, "SLURM_PROCID=4 is not in [0, SLURM_NTASKS=4)"},
		{"slurm without any node list", with(task, "SLURM_STEP_NODELIST", "", "SLURM_JOB_NODELIST", "", "SLURM_NODELIST", ""), 7373, "SLURM_JOB_NODELIST is not set"},
		{"slurm step nodes without step tasks", with(task, "SLURM_STEP_TASKS_PER_NODE", ""), 7373, "SLURM_STEP_TASKS_PER_NODE is not set"},
		{"slurm job nodes without tasks", with(task, "SLURM_STEP_NODELIST", "", "SLURM_STEP_TASKS_PER_NODE", "", "SLURM_TASKS_PER_NODE", ""), 7373, "SLURM_TASKS_PER_NODE is not set"},
		{"slurm malformed node list", with(task, "SLURM_STEP_NODELIST", "node[01-02"), 7373, `SLURM_STEP_NODELIST: host list "node[01-02": "node[01-02": a '[' without its ']'`},
		{"slurm malformed tasks", with(task, "SLURM_STEP_TASKS_PER_NODE", "2(x2"), 7373, "SLURM_STEP_TASKS_PER_NODE: task counts"},
		{"slurm a node twice", with(task, "SLURM_STEP_NODELIST", "node01,node[01]"), 7373, "names node01 twice"},
		{"slurm fewer counts than nodes", with(task, "SLURM_STEP_TASKS_PER_NODE", "4"), 7373, "names 2 nodes, SLURM_STEP_TASKS_PER_NODE=\"4\" counts tasks on 1"},
		{"slurm more counts than nodes", with(task, "SLURM_STEP_TASKS_PER_NODE", "1(x4)"), 7373, "counts tasks on 4"},
		{"slurm counts not adding up", with(task, "SLURM_STEP_TASKS_PER_NODE", "2,1"), 7373, "adds up to 3 tasks, SLURM_NTASKS=4"},
		{"slurm cyclic layout", with(task, "SLURM_NODEID", "1", "SLURM_LOCALID", "0", "SLURM_DISTRIBUTION", "cyclic"), 7373, "SLURM_NODEID=1, but task 1 is number 1 on node 0 (node01) in block order"},
		{"slurm local id off", with(task, "SLURM_LOCALID", "0"), 7373, "SLURM_LOCALID=0, but task 1"},
		{"slurm node id garbage", with(task, "SLURM_NODEID", "x"), 7373, `SLURM_NODEID="x" is not a whole number`},
		{"slurm ports past 65535", task, 65535, "2 tasks on node01 from port 65535 go past port 65535"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Discover(func(k string) string { return tc.env[k] }, tc.port)
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("got %+v, %v; want an error with %q", got, err, tc.err)
			}
			if msg := err.Error(); strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "--fleet auto: ") {
				t.Fatalf("error %q: want one line that starts with --fleet auto:", msg)
			}
		})
	}
}
