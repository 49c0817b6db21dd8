package e2e

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestBenchServeTLSLineToPaste: `s3pd bench serve --tls` prints a get
// line with --ca-bundle; run as printed (DEST filled in), it fetches the
// dataset over HTTPS, and at interrupt the server counts the handshakes
// it served and removes its certificate file.
func TestBenchServeTLSLineToPaste(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	serve := exec.CommandContext(ctx, bin, "bench", "serve", "--tls", "--listen", "127.0.0.1:0", "--dataset", "t:4:3MiB")
	serve.Env = baseEnv(t)
	stdout, err := serve.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	serve.Stderr = &stderr
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		serve.Process.Kill()
		serve.Wait()
	})
	lines := bufio.NewScanner(stdout)
	var printed []string
	for len(printed) < 2 && lines.Scan() {
		printed = append(printed, lines.Text())
	}
	if len(printed) < 2 || !strings.Contains(printed[0], "at https://127.0.0.1:") {
		t.Fatalf("bench serve --tls printed %q (stderr %q), want its https endpoint and a line to paste", printed, stderr.String())
	}
	m := regexp.MustCompile(`--ca-bundle (\S+)$`).FindStringSubmatch(printed[1])
	if m == nil {
		t.Fatalf("line to paste %q names no --ca-bundle", printed[1])
	}
	dest := t.TempDir()
	args := strings.Fields(strings.Replace(strings.TrimSpace(printed[1]), "DEST", dest, 1))
	if args[0] != "s3pd" {
		t.Fatalf("line to paste %q does not run s3pd", printed[1])
	}
	if r := run(t, nil, append(args[1:], "--quiet")...); r.code != 0 {
		t.Fatalf("%s: exit %d\n%s", printed[1], r.code, r.stderr)
	}
	for i := range 4 {
		fi, err := os.Stat(filepath.Join(dest, "t", "0000000"+string(rune('0'+i))))
		if err != nil || fi.Size() != 3<<20 {
			t.Fatalf("object %d: %v, want 3 MiB", i, err)
		}
	}
	if err := serve.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	var rest strings.Builder
	for lines.Scan() {
		rest.WriteString(lines.Text() + "\n")
	}
	if err := serve.Wait(); err != nil {
		t.Fatalf("bench serve at interrupt: %v\n%s", err, stderr.String())
	}
	hs := regexp.MustCompile(`TLS: (\d+) handshakes \(\d+ resumed, 0 failed\)`).FindStringSubmatch(rest.String())
	if hs == nil || hs[1] == "0" {
		t.Errorf("summary %q, want the handshakes counted, none failed", rest.String())
	}
	if _, err := os.Stat(m[1]); err == nil {
		t.Errorf("certificate file %s is still there after exit", m[1])
	}
}
