package e2e

import (
	"os"
	"strings"
	"testing"
)

// TestBenchDisk runs s3pd bench disk on a temporary directory: a line per
// mode with the bytes written, a verdict against the network's rate, no
// file left behind, and a clear refusal of a missing directory.
func TestBenchDisk(t *testing.T) {
	dir := t.TempDir()
	r := run(t, nil, "bench", "disk", "--json", "--files", "2", "--file-size", "8MiB", "--partsize", "1MiB", "--writers", "4", "--network-rate", "1TB", dir)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	lines := jsonLines(t, r.stdout)
	if len(lines["disk"]) != 3 || len(lines["disk_verdict"]) != 1 {
		t.Fatalf("%d disk lines and %d verdicts, want 3 and 1\n%s", len(lines["disk"]), len(lines["disk_verdict"]), r.stdout)
	}
	for _, l := range lines["disk"] {
		if l["unsupported"] != nil {
			continue // O_DIRECT on tmpfs
		}
		if l["bytes"].(float64) != 16<<20 || l["bytes_per_second"].(float64) <= 0 {
			t.Errorf("%v: want 16 MiB at a positive rate", l)
		}
	}
	// No local disk takes 1 TB/s.
	if v := lines["disk_verdict"][0]["verdict"].(string); !strings.Contains(v, "the disk would bound a pull") {
		t.Errorf("verdict %q, want the disk named against a 1 TB/s network", v)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("%d files left in %s", len(left), dir)
	}
	if r := run(t, nil, "bench", "disk", dir+"/missing"); r.code != 2 {
		t.Errorf("a missing directory: exit %d, want 2", r.code)
	}
}
