package shard

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Spec
		ok   bool
	}{
		{"0/1", Spec{0, 1}, true},
		{"3/4", Spec{3, 4}, true},
		{"63/64", Spec{63, 64}, true},
		{"4/4", Spec{}, false},
		{"-1/4", Spec{}, false},
		{"0/0", Spec{}, false},
		{"1", Spec{}, false},
		{"a/b", Spec{}, false},
		{"1/4/5", Spec{}, false},
		{"", Spec{}, false},
	} {
		got, err := Parse(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("Parse(%q) = %v, %v; want %v, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestFromEnv(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want Spec
		err  string // a substring of the error, "" for success
	}{
		{"kubernetes", map[string]string{"JOB_COMPLETION_INDEX": "2", "S3PD_SHARD_COUNT": "4"}, Spec{2, 4}, ""},
		{"kubernetes without its count", map[string]string{"JOB_COMPLETION_INDEX": "2"}, Spec{}, "S3PD_SHARD_COUNT is not set"},
		{"kubernetes count without index", map[string]string{"S3PD_SHARD_COUNT": "4"}, Spec{}, "JOB_COMPLETION_INDEX is not set"},
		{"kubernetes index past count", map[string]string{"JOB_COMPLETION_INDEX": "4", "S3PD_SHARD_COUNT": "4"}, Spec{}, "is not in [0, S3PD_SHARD_COUNT=4)"},
		{"kubernetes garbage", map[string]string{"JOB_COMPLETION_INDEX": "x", "S3PD_SHARD_COUNT": "4"}, Spec{}, `JOB_COMPLETION_INDEX="x" is not a whole number`},
		{"slurm from zero", map[string]string{"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "7", "SLURM_ARRAY_TASK_COUNT": "8"}, Spec{3, 8}, ""},
		{"slurm from one", map[string]string{"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_MAX": "4", "SLURM_ARRAY_TASK_COUNT": "4", "SLURM_ARRAY_TASK_STEP": "1"}, Spec{0, 4}, ""},
		{"slurm with a step", map[string]string{"SLURM_ARRAY_TASK_ID": "2", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "6", "SLURM_ARRAY_TASK_COUNT": "4", "SLURM_ARRAY_TASK_STEP": "2"}, Spec{}, "has a step"},
		{"slurm with gaps", map[string]string{"SLURM_ARRAY_TASK_ID": "5", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "5", "SLURM_ARRAY_TASK_COUNT": "3"}, Spec{}, "has gaps"},
		{"slurm without its count", map[string]string{"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "3"}, Spec{}, "SLURM_ARRAY_TASK_COUNT is not set"},
		{"both", map[string]string{"JOB_COMPLETION_INDEX": "0", "S3PD_SHARD_COUNT": "2", "SLURM_ARRAY_TASK_ID": "0"}, Spec{}, "both Kubernetes"},
		{"neither", map[string]string{}, Spec{}, "neither"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := FromEnv(func(k string) string { return tc.env[k] })
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("error %v, want %v", err, tc.want)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("got %v, %v; want an error with %q", got, err, tc.err)
			case got != tc.want:
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}
