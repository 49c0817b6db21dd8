package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/s3pd/s3pd/pkg/s3emu"
)

// TestAWSConfigSetsPartSize writes the AWS CLI's own config file with `aws
// configure set` and checks, from the emulator's request log, that the
// built binary fetched ranges of that size.
func TestAWSConfigSetsPartSize(t *testing.T) {
	aws, err := exec.LookPath("aws")
	if err != nil {
		unavailable(t, "the AWS CLI is not installed (.ci/run installs it)")
	}
	home := t.TempDir()
	cfg := filepath.Join(home, "aws-config")
	set := exec.Command(aws, "configure", "set", "default.s3.multipart_chunksize", "3MB")
	set.Env = append(os.Environ(), "AWS_CONFIG_FILE="+cfg)
	if out, err := set.CombinedOutput(); err != nil {
		t.Fatalf("aws configure set: %v\n%s", err, out)
	}
	// One request at a time, so the run's last wave is its last part:
	// a wider window would plan the tail of the object in pieces of its
	// own size (docs/ARCHITECTURE.md, the tail).
	one := exec.Command(aws, "configure", "set", "default.s3.max_concurrent_requests", "1")
	one.Env = set.Env
	if out, err := one.CombinedOutput(); err != nil {
		t.Fatalf("aws configure set: %v\n%s", err, out)
	}
	s := emuStore(t, s3emu.Options{Dataset: "cfg:1:9MiB", LogRequests: true})
	dest := t.TempDir()
	r := run(t, []string{"AWS_CONFIG_FILE=" + cfg}, s.cmd("get", s.url("cfg/"), dest)...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	want := map[string]bool{"bytes=0-3145727": false, "bytes=3145728-6291455": false, "bytes=6291456-9437183": false}
	for _, req := range s.emu.Log() {
		if req.Method == "GET" && req.Key == "cfg/00000000" {
			if _, ok := want[req.Range]; !ok {
				t.Errorf("unexpected range %q: want 3 MiB parts", req.Range)
			}
			want[req.Range] = true
		}
	}
	for rng, seen := range want {
		if !seen {
			t.Errorf("range %s was not requested", rng)
		}
	}
	checkSynthetic(t, filepath.Join(dest, "00000000"), "cfg/00000000", 9<<20)
}
