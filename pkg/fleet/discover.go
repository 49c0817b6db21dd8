package fleet

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// DefaultPort is the port a fleet node listens on when its peers are
// discovered (--fleet auto) and --fleet-port does not name another.
const DefaultPort = 7373

// Discovered is a fleet as read from a scheduler's environment.
type Discovered struct {
	// Self is this node's index, 0 <= Self < len(Peers).
	Self int
	// Peers are the nodes' addresses (host:port) by node index; Peers[Self]
	// is this node's own.
	Peers []string
	// From names the scheduler: "kubernetes" or "slurm".
	From string
}

// EnvService is the variable that names, for --fleet auto in a
// Kubernetes Indexed Job, the headless Service whose subdomain the pods
// are (configs/k8s/fleet-job.yaml sets it).
const EnvService = "S3PD_FLEET_SERVICE"

// The variables Discover reads.
const (
	envK8sIndex   = "JOB_COMPLETION_INDEX"
	envK8sCount   = "S3PD_SHARD_COUNT" // shard.EnvCount
	envK8sService = EnvService
	envK8sHost    = "HOSTNAME"

	envSlurmProc      = "SLURM_PROCID"
	envSlurmNTasks    = "SLURM_NTASKS"
	envSlurmNodes     = "SLURM_JOB_NODELIST"
	envSlurmTasks     = "SLURM_TASKS_PER_NODE"
	envSlurmStepNodes = "SLURM_STEP_NODELIST"
	envSlurmStepTasks = "SLURM_STEP_TASKS_PER_NODE"
	envSlurmNodeID    = "SLURM_NODEID"
	envSlurmLocalID   = "SLURM_LOCALID"
	envSlurmArray     = "SLURM_ARRAY_TASK_ID"
	envSlurmStep      = "SLURM_STEP_ID"
)

// maxHosts bounds what a host list may expand to.
const maxHosts = 1 << 16

// Discover reads this node's index and every node's address from the
// scheduler that started the process, for --fleet auto --peers auto.
//
// Kubernetes, an Indexed Job whose pod template sets subdomain to a
// headless Service: Self = JOB_COMPLETION_INDEX, N = S3PD_SHARD_COUNT
// (the Job's completions), the Service's name from S3PD_FLEET_SERVICE,
// and the Job's name from HOSTNAME, which Kubernetes sets to
// JOB-NAME-INDEX in such a pod. Node i is JOB-NAME-i.SERVICE:port.
//
// Slurm, one job of N tasks started by srun: Self = SLURM_PROCID, N =
// SLURM_NTASKS, the nodes from SLURM_STEP_NODELIST (else
// SLURM_JOB_NODELIST) expanded, and the tasks laid on them in block
// order by SLURM_STEP_TASKS_PER_NODE (else SLURM_TASKS_PER_NODE): the
// first node's count of tasks on the first node, and so on. The j-th
// task on a node (0-based) listens on port+j. Where srun sets
// SLURM_NODEID and SLURM_LOCALID, this task's must agree with that
// layout (it does not for --distribution=cyclic, which is refused). A
// process without SLURM_STEP_ID (the batch script itself, not a task
// started by srun) is refused.
//
// It refuses the variables of both schedulers at once, half of either,
// a Slurm job array (its tasks are separate jobs), and values that do
// not fit, with one line naming the variable.
func Discover(getenv func(string) string, port int) (Discovered, error) {
	if port < 1 || port > 65535 {
		return Discovered{}, fmt.Errorf("--fleet auto: port %d is not in [1, 65535]", port)
	}
	k8s := getenv(envK8sIndex) != "" || getenv(envK8sCount) != "" || getenv(envK8sService) != ""
	slurm := getenv(envSlurmProc) != "" || getenv(envSlurmNodes) != "" || getenv(envSlurmArray) != ""
	switch {
	case k8s && slurm:
		return Discovered{}, fmt.Errorf("--fleet auto: both Kubernetes (%s/%s) and Slurm (%s/%s) variables are set", envK8sIndex, envK8sService, envSlurmProc, envSlurmNodes)
	case k8s:
		return discoverK8s(getenv, port)
	case slurm:
		return discoverSlurm(getenv, port)
	}
	return Discovered{}, fmt.Errorf("--fleet auto: neither %s and %s (a Kubernetes Indexed Job) nor %s and %s (a Slurm job step) is set", envK8sIndex, envK8sService, envSlurmProc, envSlurmNodes)
}

func discoverK8s(getenv func(string) string, port int) (Discovered, error) {
	k, err := fleetEnvInt(getenv, envK8sIndex)
	if err != nil {
		return Discovered{}, err
	}
	n, err := fleetEnvInt(getenv, envK8sCount)
	if err != nil {
		return Discovered{}, err
	}
	if n < 1 || k < 0 || k >= n {
		return Discovered{}, fmt.Errorf("--fleet auto: %s=%d is not in [0, %s=%d)", envK8sIndex, k, envK8sCount, n)
	}
	if n > maxHosts {
		return Discovered{}, fmt.Errorf("--fleet auto: %s=%d is more than %d nodes", envK8sCount, n, maxHosts)
	}
	svc := strings.TrimSuffix(strings.TrimSpace(getenv(envK8sService)), ".")
	if svc == "" {
		return Discovered{}, fmt.Errorf("--fleet auto: %s is not set (the headless Service the pods are the subdomain of)", envK8sService)
	}
	if !dnsName(svc) {
		return Discovered{}, fmt.Errorf("--fleet auto: %s=%q is not a DNS name", envK8sService, svc)
	}
	host := getenv(envK8sHost)
	if host == "" {
		return Discovered{}, fmt.Errorf("--fleet auto: %s is not set (an Indexed Job's pod is named JOB-NAME-%d)", envK8sHost, k)
	}
	job, ok := strings.CutSuffix(host, "-"+strconv.Itoa(k))
	if !ok || job == "" || !dnsName(job) {
		return Discovered{}, fmt.Errorf("--fleet auto: %s=%q is not JOB-NAME-%d (%s=%d): is the pod of an Indexed Job?", envK8sHost, host, k, envK8sIndex, k)
	}
	peers := make([]string, n)
	for i := range peers {
		peers[i] = net.JoinHostPort(job+"-"+strconv.Itoa(i)+"."+svc, strconv.Itoa(port))
	}
	return Discovered{Self: k, Peers: peers, From: "kubernetes"}, nil
}

func discoverSlurm(getenv func(string) string, port int) (Discovered, error) {
	if v := getenv(envSlurmArray); v != "" {
		return Discovered{}, fmt.Errorf("--fleet auto: %s=%s: the tasks of a Slurm job array are separate jobs and cannot find each other; run one job with --ntasks N and srun", envSlurmArray, v)
	}
	if getenv(envSlurmStep) == "" {
		// The batch script itself has SLURM_PROCID=0 and the job's task
		// count, but it is one process, not the job's tasks.
		return Discovered{}, fmt.Errorf("--fleet auto: %s is not set: this is not a task of a job step; start s3pd with srun, one task per fleet node", envSlurmStep)
	}
	self, err := fleetEnvInt(getenv, envSlurmProc)
	if err != nil {
		return Discovered{}, err
	}
	n, err := fleetEnvInt(getenv, envSlurmNTasks)
	if err != nil {
		return Discovered{}, err
	}
	if n < 1 || self < 0 || self >= n {
		return Discovered{}, fmt.Errorf("--fleet auto: %s=%d is not in [0, %s=%d)", envSlurmProc, self, envSlurmNTasks, n)
	}
	nodesVar, tasksVar := envSlurmStepNodes, envSlurmStepTasks
	if getenv(nodesVar) == "" {
		nodesVar, tasksVar = envSlurmNodes, envSlurmTasks
	}
	for _, v := range []string{nodesVar, tasksVar} {
		if getenv(v) == "" {
			return Discovered{}, fmt.Errorf("--fleet auto: %s is not set", v)
		}
	}
	hosts, err := expandHostlist(getenv(nodesVar))
	if err != nil {
		return Discovered{}, fmt.Errorf("--fleet auto: %s: %w", nodesVar, err)
	}
	seen := make(map[string]bool, len(hosts))
	for _, h := range hosts {
		if seen[h] {
			return Discovered{}, fmt.Errorf("--fleet auto: %s=%q names %s twice", nodesVar, getenv(nodesVar), h)
		}
		seen[h] = true
	}
	counts, err := expandTasksPerNode(getenv(tasksVar))
	if err != nil {
		return Discovered{}, fmt.Errorf("--fleet auto: %s: %w", tasksVar, err)
	}
	if len(counts) != len(hosts) {
		return Discovered{}, fmt.Errorf("--fleet auto: %s names %d nodes, %s=%q counts tasks on %d", nodesVar, len(hosts), tasksVar, getenv(tasksVar), len(counts))
	}
	total := 0
	for _, c := range counts {
		total += c
	}
	if total != n {
		return Discovered{}, fmt.Errorf("--fleet auto: %s=%q adds up to %d tasks, %s=%d", tasksVar, getenv(tasksVar), total, envSlurmNTasks, n)
	}
	peers := make([]string, 0, n)
	selfNode, selfLocal := -1, -1
	for node, c := range counts {
		for local := range c {
			if port+local > 65535 {
				return Discovered{}, fmt.Errorf("--fleet auto: %d tasks on %s from port %d go past port 65535", c, hosts[node], port)
			}
			if len(peers) == self {
				selfNode, selfLocal = node, local
			}
			peers = append(peers, net.JoinHostPort(hosts[node], strconv.Itoa(port+local)))
		}
	}
	for _, check := range []struct {
		name string
		want int
	}{{envSlurmNodeID, selfNode}, {envSlurmLocalID, selfLocal}} {
		if getenv(check.name) == "" {
			continue
		}
		got, err := fleetEnvInt(getenv, check.name)
		if err != nil {
			return Discovered{}, err
		}
		if got != check.want {
			return Discovered{}, fmt.Errorf("--fleet auto: %s=%d, but task %d is number %d on node %d (%s) in block order: lay the tasks out in block order (srun --distribution=block)", check.name, got, self, selfLocal, selfNode, hosts[selfNode])
		}
	}
	return Discovered{Self: self, Peers: peers, From: "slurm"}, nil
}

// expandHostlist expands a Slurm host list such as
// "node[01-03,07],gpu-a[1-2],login1" into its host names in order
// (node01 node02 node03 node07 gpu-a1 gpu-a2 login1), as scontrol show
// hostnames does. A range keeps the width of its first number
// ("01-03"); a name with several bracket groups ("rack[1-2]-n[1-2]")
// takes every combination, the first group slowest. It refuses, as
// Slurm does, text after a name's last bracket group ("n[1-2]-ib"),
// brackets that do not pair, nest or hold nothing, and ranges that run
// backwards or are not numbers; and, where Slurm would take them, empty
// names, spaces, half ranges ("n[1-]") and lists of more than 65,536
// hosts, none of which Slurm writes.
func expandHostlist(list string) ([]string, error) {
	if strings.TrimSpace(list) == "" {
		return nil, fmt.Errorf("empty host list")
	}
	var hosts []string
	for _, name := range splitTop(list) {
		if name == "" {
			return nil, fmt.Errorf("host list %q: an empty name", list)
		}
		if strings.ContainsAny(name, " \t\n") {
			return nil, fmt.Errorf("host list %q: %q holds a space", list, name)
		}
		expanded, err := expandName(name, maxHosts-len(hosts))
		if err != nil {
			return nil, fmt.Errorf("host list %q: %w", list, err)
		}
		hosts = append(hosts, expanded...)
	}
	return hosts, nil
}

// splitTop splits a host list at the commas outside brackets.
func splitTop(list string) []string {
	var out []string
	depth, start := 0, 0
	for i, r := range list {
		switch r {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, list[start:i])
				start = i + 1
			}
		}
	}
	return append(out, list[start:])
}

// expandName expands one name of a host list, at most limit hosts.
func expandName(name string, limit int) ([]string, error) {
	open := strings.IndexByte(name, '[')
	if open < 0 {
		if strings.IndexByte(name, ']') >= 0 {
			return nil, fmt.Errorf("%q: a ']' without its '['", name)
		}
		if limit < 1 {
			return nil, fmt.Errorf("more than %d hosts", maxHosts)
		}
		return []string{name}, nil
	}
	prefix := name[:open]
	if strings.IndexByte(prefix, ']') >= 0 {
		return nil, fmt.Errorf("%q: a ']' without its '['", name)
	}
	end := strings.IndexByte(name[open+1:], ']')
	if end < 0 {
		return nil, fmt.Errorf("%q: a '[' without its ']'", name)
	}
	inside := name[open+1 : open+1+end]
	if strings.IndexByte(inside, '[') >= 0 {
		return nil, fmt.Errorf("%q: brackets inside brackets", name)
	}
	if inside == "" {
		return nil, fmt.Errorf("%q: empty brackets", name)
	}
	var nums []string
	for _, r := range strings.Split(inside, ",") {
		got, err := expandRange(r, limit-len(nums))
		if err != nil {
			return nil, fmt.Errorf("%q: %w", name, err)
		}
		nums = append(nums, got...)
	}
	tail := name[open+1+end+1:]
	if tail != "" && strings.IndexByte(tail, '[') < 0 {
		return nil, fmt.Errorf("%q: %q after the last ']'", name, tail)
	}
	rest, err := expandName(tail, limit)
	if err != nil {
		return nil, err
	}
	if len(nums)*len(rest) > limit {
		return nil, fmt.Errorf("more than %d hosts", maxHosts)
	}
	out := make([]string, 0, len(nums)*len(rest))
	for _, n := range nums {
		for _, r := range rest {
			out = append(out, prefix+n+r)
		}
	}
	return out, nil
}

// expandRange expands "7", "01-03" of a bracket, at most limit numbers.
func expandRange(r string, limit int) ([]string, error) {
	lo, hi, isRange := strings.Cut(r, "-")
	if !isRange {
		hi = lo
	}
	if !digits(lo) || !digits(hi) {
		return nil, fmt.Errorf("range %q: want N or N-M of whole numbers", r)
	}
	a, errA := strconv.Atoi(lo)
	b, errB := strconv.Atoi(hi)
	if errA != nil || errB != nil {
		return nil, fmt.Errorf("range %q: numbers too large", r)
	}
	if b < a {
		return nil, fmt.Errorf("range %q runs backwards", r)
	}
	if b-a+1 > limit {
		return nil, fmt.Errorf("range %q: more than %d hosts", r, maxHosts)
	}
	width := len(lo)
	out := make([]string, 0, b-a+1)
	for i := a; i <= b; i++ {
		out = append(out, fmt.Sprintf("%0*d", width, i))
	}
	return out, nil
}

// expandTasksPerNode expands Slurm's SLURM_TASKS_PER_NODE, such as
// "2(x3),1", into one count per node (2 2 2 1). Every count must be at
// least 1, and a repeat (xR) too.
func expandTasksPerNode(v string) ([]int, error) {
	if strings.TrimSpace(v) == "" {
		return nil, fmt.Errorf("empty task counts")
	}
	var out []int
	for _, part := range strings.Split(v, ",") {
		count, times := part, "1"
		if c, rest, ok := strings.Cut(part, "(x"); ok {
			r, closed := strings.CutSuffix(rest, ")")
			if !closed {
				return nil, fmt.Errorf("task counts %q: %q: want C or C(xR)", v, part)
			}
			count, times = c, r
		}
		if !digits(count) || !digits(times) {
			return nil, fmt.Errorf("task counts %q: %q: want C or C(xR) of whole numbers", v, part)
		}
		c, errC := strconv.Atoi(count)
		r, errR := strconv.Atoi(times)
		if errC != nil || errR != nil || c < 1 || r < 1 {
			return nil, fmt.Errorf("task counts %q: %q: counts and repeats must be at least 1", v, part)
		}
		if len(out)+r > maxHosts {
			return nil, fmt.Errorf("task counts %q: more than %d nodes", v, maxHosts)
		}
		for range r {
			out = append(out, c)
		}
	}
	return out, nil
}

// digits says whether s is one or more ASCII digits.
func digits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// dnsName says whether s is a DNS name of letters, digits, '-' and '.'
// with no empty label.
func dnsName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

// fleetEnvInt reads a variable that must be a whole number.
func fleetEnvInt(getenv func(string) string, name string) (int, error) {
	v := getenv(name)
	if v == "" {
		return 0, fmt.Errorf("--fleet auto: %s is not set", name)
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return 0, fmt.Errorf("--fleet auto: %s=%q is not a whole number", name, v)
	}
	return n, nil
}
