package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/s3pd/s3pd/pkg/s3emu"
)

// s3.max_concurrent_requests in ~/.aws/config must not cap --workers and
// --threads given on the command line: the run warns once, config show
// marks the value overridden, and the server sees more requests in flight
// than the lower setting allowed.
func TestFlagsAreNotCappedByAWSConfig(t *testing.T) {
	home := t.TempDir()
	cfg := filepath.Join(home, "aws-config")
	if err := os.WriteFile(cfg, []byte("[default]\ns3 =\n  max_concurrent_requests = 4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"AWS_CONFIG_FILE=" + cfg}

	r := run(t, env, "config", "show", "--workers", "4", "--threads", "4")
	if r.code != 0 || !strings.Contains(r.stdout, "overridden: max_concurrent_requests = 4 from aws-config") {
		t.Fatalf("config show: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, line := range strings.Split(r.stdout, "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "max_concurrent_requests" && (f[1] != "16" || !strings.Contains(line, "(overridden)")) {
			t.Errorf("config show: %q, want 16 derived, marked overridden", line)
		}
	}

	s := emuStore(t, s3emu.Options{Dataset: "p:8:4MiB", TTFB: 50 * time.Millisecond})
	r = run(t, env, s.cmd("get", "--workers", "4", "--threads", "4", "--partsize", "1MiB", s.url("p/"), t.TempDir())...)
	if r.code != 0 {
		t.Fatalf("get: exit %d\n%s", r.code, r.stderr)
	}
	if n := strings.Count(r.stderr, "overridden"); n != 1 {
		t.Errorf("want one warning that max_concurrent_requests is overridden, got %d:\n%s", n, r.stderr)
	}
	if st := s.emu.Stats(); st.MaxInFlight <= 4 {
		t.Errorf("server saw at most %d requests in flight: the AWS config's 4 capped the flags' 16", st.MaxInFlight)
	}
}
