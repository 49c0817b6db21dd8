// Package shard splits one listing over N processes that do not talk to
// each other: the largest objects go whole, largest first, to the shard
// with the fewest bytes, and the rest are laid out by a hash of key and
// size and cut into stretches of what each shard still lacks, so every
// shard is near an even share of the bytes and the split depends on the
// set of objects alone, not on the order of the listing
// (docs/SCALE-OUT.md). It also reads the shard from a scheduler's
// environment (a Kubernetes Indexed Job, a Slurm job array) and checks,
// by set hashes, that a fleet's summaries cover a listing exactly once.
package shard

import (
	"fmt"
	"strconv"
	"strings"
)

// Spec names one shard: K of N, 0 <= K < N.
type Spec struct{ K, N int }

// String is the "K/N" form the flag takes.
func (s Spec) String() string { return fmt.Sprintf("%d/%d", s.K, s.N) }

// Parse reads "K/N" with 0 <= K < N.
func Parse(v string) (Spec, error) {
	k, n, ok := strings.Cut(v, "/")
	if !ok {
		return Spec{}, fmt.Errorf("shard %q: want K/N (0 <= K < N) or auto", v)
	}
	ki, kerr := strconv.Atoi(k)
	ni, nerr := strconv.Atoi(n)
	if kerr != nil || nerr != nil || ni < 1 || ki < 0 || ki >= ni {
		return Spec{}, fmt.Errorf("shard %q: want K/N with 0 <= K < N", v)
	}
	return Spec{K: ki, N: ni}, nil
}

// EnvCount is the variable a Kubernetes Indexed Job sets to its
// completions, for --shard auto: N (Kubernetes gives only K).
const EnvCount = "S3PD_SHARD_COUNT"

// The variables FromEnv reads.
const (
	envK8sIndex  = "JOB_COMPLETION_INDEX"
	envK8sCount  = EnvCount
	envSlurmTask = "SLURM_ARRAY_TASK_ID"
	envSlurmMin  = "SLURM_ARRAY_TASK_MIN"
	envSlurmMax  = "SLURM_ARRAY_TASK_MAX"
	envSlurmCnt  = "SLURM_ARRAY_TASK_COUNT"
	envSlurmStep = "SLURM_ARRAY_TASK_STEP"
)

// FromEnv reads the shard from a Kubernetes Indexed Job
// (K = JOB_COMPLETION_INDEX, N = S3PD_SHARD_COUNT) or a Slurm job array
// (K = SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN, N =
// SLURM_ARRAY_TASK_COUNT). It refuses both at once, half of either, and
// a Slurm array with a step or gaps (its count must be MAX-MIN+1).
func FromEnv(getenv func(string) string) (Spec, error) {
	k8s := getenv(envK8sIndex) != "" || getenv(envK8sCount) != ""
	slurm := getenv(envSlurmTask) != ""
	switch {
	case k8s && slurm:
		return Spec{}, fmt.Errorf("--shard auto: both Kubernetes (%s/%s) and Slurm (%s) variables are set", envK8sIndex, envK8sCount, envSlurmTask)
	case k8s:
		return fromK8s(getenv)
	case slurm:
		return fromSlurm(getenv)
	}
	return Spec{}, fmt.Errorf("--shard auto: neither %s and %s (Kubernetes) nor %s (Slurm) is set", envK8sIndex, envK8sCount, envSlurmTask)
}

func fromK8s(getenv func(string) string) (Spec, error) {
	k, err := envInt(getenv, envK8sIndex)
	if err != nil {
		return Spec{}, err
	}
	n, err := envInt(getenv, envK8sCount)
	if err != nil {
		return Spec{}, err
	}
	if n < 1 || k < 0 || k >= n {
		return Spec{}, fmt.Errorf("--shard auto: %s=%d is not in [0, %s=%d)", envK8sIndex, k, envK8sCount, n)
	}
	return Spec{K: k, N: n}, nil
}

func fromSlurm(getenv func(string) string) (Spec, error) {
	vals := map[string]int{}
	for _, name := range []string{envSlurmTask, envSlurmMin, envSlurmMax, envSlurmCnt} {
		v, err := envInt(getenv, name)
		if err != nil {
			return Spec{}, err
		}
		vals[name] = v
	}
	if step := getenv(envSlurmStep); step != "" && step != "1" {
		return Spec{}, fmt.Errorf("--shard auto: the Slurm array has a step (%s=%s): use a contiguous array such as --array=0-%d", envSlurmStep, step, vals[envSlurmCnt]-1)
	}
	lo, hi, n, id := vals[envSlurmMin], vals[envSlurmMax], vals[envSlurmCnt], vals[envSlurmTask]
	if n != hi-lo+1 {
		return Spec{}, fmt.Errorf("--shard auto: the Slurm array has gaps or a step (%s=%d, but %s-%s+1 = %d)", envSlurmCnt, n, envSlurmMax, envSlurmMin, hi-lo+1)
	}
	if id < lo || id > hi {
		return Spec{}, fmt.Errorf("--shard auto: %s=%d is outside [%s=%d, %s=%d]", envSlurmTask, id, envSlurmMin, lo, envSlurmMax, hi)
	}
	return Spec{K: id - lo, N: n}, nil
}

// envInt reads a variable that must be a whole number.
func envInt(getenv func(string) string, name string) (int, error) {
	v := getenv(name)
	if v == "" {
		return 0, fmt.Errorf("--shard auto: %s is not set", name)
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return 0, fmt.Errorf("--shard auto: %s=%q is not a whole number", name, v)
	}
	return n, nil
}

// MarshalText writes "K/N".
func (s Spec) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads "K/N".
func (s *Spec) UnmarshalText(b []byte) error {
	v, err := Parse(string(b))
	if err == nil {
		*s = v
	}
	return err
}
