package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/s3pd/s3pd/pkg/s3emu"
)

// --max-bandwidth holds back every path where bytes pass through s3pd,
// including those where a part is written whole (uploads, the kernel's
// copy_file_range between local files), and says it cannot apply to a
// server-side copy. 8 MiB at 4 MiB/s takes about two seconds; the bound
// checked is half that, which only a cap that was bypassed can miss.
func TestMaxBandwidthOnEveryPath(t *testing.T) {
	const size = 8 << 20
	src := writeFiles(t, t.TempDir(), map[string][]byte{"f": randomBytes(7, size)})
	s := emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory, Buckets: []string{"bw-dst"}})
	flags := []string{"--max-bandwidth", "4MiB/s", "--partsize", "1MiB", "--multipart-threshold", "1MiB"}
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"local to local", append(append([]string{"copy", "--quiet"}, flags...), src, filepath.Join(t.TempDir(), "l"))},
		{"upload", s.cmd("copy", append(flags, src, s.url("up/"))...)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			r := run(t, nil, tt.args...)
			took := time.Since(start)
			if r.code != 0 {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
			}
			if took < time.Second {
				t.Errorf("8 MiB at --max-bandwidth 4MiB/s took %s: the cap was bypassed", took)
			}
		})
	}
	r := run(t, nil, s.cmd("copy", append(flags, "--copy-threshold", "1MiB", s.url("up/"), "s3://bw-dst/c/")...)...)
	if r.code != 0 {
		t.Fatalf("server-side copy: exit %d\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "--max-bandwidth does not apply to a server-side copy") {
		t.Errorf("server-side copy with --max-bandwidth: no warning on stderr: %q", r.stderr)
	}
	dest := t.TempDir()
	if r := run(t, nil, s.cmd("copy", "s3://bw-dst/c/", dest)...); r.code != 0 {
		t.Fatalf("fetch back: exit %d\n%s", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(dest, "f")); sum(b) != sum(randomBytes(7, size)) {
		t.Error("the server-side copy differs")
	}
}
