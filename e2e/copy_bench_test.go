package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/s3pd/s3pd/internal/testenv"
)

// benchDir is where the local copy benchmarks keep their trees: tmpfs,
// so the disk does not decide. COPYBENCH_DIR overrides it.
func benchDir(b *testing.B) string {
	d := os.Getenv("COPYBENCH_DIR")
	if d == "" {
		d = "/dev/shm"
	}
	if _, err := os.Stat(d); err != nil {
		b.Skipf("no %s for the copy benchmarks: set COPYBENCH_DIR to a tmpfs", d)
	}
	return filepath.Join(d, "s3pd-copybench")
}

// benchSource makes (once, then reuses) count files of size bytes under
// dir/name, of incompressible bytes.
func benchSource(b *testing.B, dir, name string, count int, size int64) string {
	b.Helper()
	src := filepath.Join(dir, name)
	stamp := filepath.Join(dir, fmt.Sprintf("%s.complete-%d-%d", name, count, size))
	if _, err := os.Stat(stamp); err == nil {
		return src
	}
	os.RemoveAll(src)
	if err := os.MkdirAll(src, 0o755); err != nil {
		b.Fatal(err)
	}
	chunk := randomBytes(uint64(count), 1<<20)
	for i := range count {
		f, err := os.Create(filepath.Join(src, fmt.Sprintf("d%02d/f%05d", i%20, i)))
		if os.IsNotExist(err) {
			os.MkdirAll(filepath.Join(src, fmt.Sprintf("d%02d", i%20)), 0o755)
			f, err = os.Create(filepath.Join(src, fmt.Sprintf("d%02d/f%05d", i%20, i)))
		}
		if err != nil {
			b.Fatal(err)
		}
		for left := size; left > 0; left -= int64(len(chunk)) {
			chunk[0]++ // files differ
			if _, err := f.Write(chunk[:min(left, int64(len(chunk)))]); err != nil {
				b.Fatal(err)
			}
		}
		f.Close()
	}
	os.WriteFile(stamp, nil, 0o644)
	return src
}

// BenchmarkCopyLocal compares `s3pd copy` with `cp -r` on tmpfs, for a
// tree of 2,000 files of 1 MiB and for one 2 GiB file. Run it with
// -benchtime 1x and repeat the process (see docs/BENCHMARKS.md, section "s3pd copy"), so
// the two tools alternate; which goes first alternates too (round).
func BenchmarkCopyLocal(b *testing.B) {
	dir := benchDir(b)
	exe := copyBinary(b)
	cases := []struct {
		name  string
		count int
		size  int64
	}{
		{"tree-2000x1MiB", 2000, 1 << 20},
		{"file-2GiB", 1, 2 << 30},
	}
	for _, c := range cases {
		src := benchSource(b, dir, c.name, c.count, c.size)
		total := int64(c.count) * c.size
		tools := []struct {
			name string
			cmd  func(dst string) *exec.Cmd
		}{
			{"s3pd", func(dst string) *exec.Cmd {
				return exec.Command(exe, "copy", "--quiet", "--overwrite", src, dst)
			}},
			{"cp", func(dst string) *exec.Cmd { return exec.Command("cp", "-r", src, dst) }},
		}
		if round()%2 == 0 {
			tools[0], tools[1] = tools[1], tools[0] // the tool that goes first alternates by round
		}
		for _, tool := range tools {
			b.Run(c.name+"/tool="+tool.name, func(b *testing.B) {
				b.SetBytes(total)
				dst := filepath.Join(dir, "dst")
				for range b.N {
					b.StopTimer()
					os.RemoveAll(dst)
					cmd := tool.cmd(dst)
					cmd.Env = []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH")}
					testenv.WarmPages(b, total+64<<20)
					b.StartTimer()
					if out, err := cmd.CombinedOutput(); err != nil {
						b.Fatalf("%s: %v\n%s", tool.name, err, out)
					}
				}
				b.StopTimer()
				os.RemoveAll(dst)
			})
		}
	}
}

// round is the round of the benchmark's run (COPYBENCH_ROUND, from 1;
// 1 when unset): bench/copy.sh sets it, so that the order of the tools
// alternates between rounds.
func round() int {
	n, err := strconv.Atoi(os.Getenv("COPYBENCH_ROUND"))
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// copyBinary is the s3pd to measure: COPYBENCH_BIN if set, else the one
// TestMain built, provided it has the copy command.
func copyBinary(b *testing.B) string {
	exe := os.Getenv("COPYBENCH_BIN")
	if exe == "" {
		exe = bin
	}
	if out, err := exec.Command(exe, "copy", "--help").CombinedOutput(); err != nil || !strings.Contains(string(out), "copy [flags] SRC DEST") {
		b.Skipf("%s has no copy command: %v\n%s", exe, err, out)
	}
	return exe
}
