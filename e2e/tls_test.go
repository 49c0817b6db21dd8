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

	"github.com/s3pd/s3pd/pkg/s3emu"
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

// TestBenchOverHTTPSAndHTTP: bench's embedded emulator serves plain HTTP
// with --http (no handshakes, scheme http); against a URL over HTTPS
// (the emulator's TLS server, trusted with --ca-bundle) the client counts
// the handshakes the server counted.
func TestBenchOverHTTPSAndHTTP(t *testing.T) {
	r := run(t, nil, "bench", "--http", "--dataset", "d:4:1MiB", "--ttfb", "0", "--conn-rate", "0", "--json")
	var s benchSummary
	if r.code != 0 {
		t.Fatalf("bench --http: exit %d\n%s", r.code, r.stderr)
	}
	lastJSON(t, r.stdout, &s)
	if s.Scheme != "http" || s.Transport != "plain HTTP (emulator process)" || s.TLSHandshakes != 0 || s.Objects != 4 {
		t.Errorf("bench --http: %+v, want 4 objects over http, no handshakes", s)
	}
	if r := run(t, nil, "bench", "--http", "s3://b/p/"); r.code != 2 || !strings.Contains(r.stderr, "--http is for the embedded emulator") {
		t.Errorf("bench --http with a URL: exit %d, %s; want 2 naming --http", r.code, r.stderr)
	}

	ts := s3emu.NewTLSTestServer(t, s3emu.Options{Dataset: "d:6:3MiB"})
	st := &store{name: "emulator over TLS", endpoint: ts.URL, bucket: s3emu.DefaultBucket, emu: ts.Server}
	r = run(t, nil, st.cmd("bench", "--json", "--ca-bundle", ts.CAFile, st.url("d/"))...)
	if r.code != 0 {
		t.Fatalf("bench over TLS: exit %d\n%s", r.code, r.stderr)
	}
	var u benchSummary
	lastJSON(t, r.stdout, &u)
	// The server counts a connection that sent no request when it sees
	// it close, soon after s3pd exits.
	srv := awaitCounts(ts.Server, func(st s3emu.Stats) bool { return st.TLSHandshakes >= u.TLSHandshakes })
	if u.Scheme != "https" || u.Transport != "HTTPS" || u.Objects != 6 || u.EmulatorInProcess || u.TLSHandshakes < 1 ||
		u.TLSHandshakes != srv.TLSHandshakes || u.TLSResumed != srv.TLSResumed {
		t.Errorf("bench over TLS: %+v; the server counted %d handshakes, %d resumed; want https and the same counts", u, srv.TLSHandshakes, srv.TLSResumed)
	}
}

// TestBenchCompareWarnsAcrossSchemes: a saved HTTP run compared with an
// HTTPS one is warned about, so TLS's cost is not read as a regression;
// two runs over one scheme are not.
func TestBenchCompareWarnsAcrossSchemes(t *testing.T) {
	dir := t.TempDir()
	save := func(name string, extra ...string) string {
		args := append([]string{"bench", "--json", "--dataset", "d:2:1MiB", "--ttfb", "0", "--conn-rate", "0"}, extra...)
		r := run(t, nil, args...)
		if r.code != 0 {
			t.Fatalf("bench %v: exit %d\n%s", extra, r.code, r.stderr)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(r.stdout), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	plain, tls := save("http.json", "--http"), save("https.json")
	r := run(t, nil, "bench", "compare", plain, tls)
	if r.code != 0 || !strings.Contains(r.stderr, "warning: A ran over http and B over https") {
		t.Errorf("compare http with https: exit %d, stderr %q; want 0 and a warning naming both schemes", r.code, r.stderr)
	}
	if r := run(t, nil, "bench", "compare", tls, tls); r.code != 0 || strings.Contains(r.stderr, "warning") {
		t.Errorf("compare https with https: exit %d, stderr %q; want 0 and no warning", r.code, r.stderr)
	}
}

// TestTLSResumptionTarget: over the one transport's session cache, at
// least 90 % of the connections a run dials after its first handshake
// completed resume (the server's count), and the run's own count of its
// handshakes is the server's: each connection counted once, whichever
// client of the run dialled it. A second run, a new process with a new
// cache, pays one full handshake and resumes the rest.
func TestTLSResumptionTarget(t *testing.T) {
	ts := s3emu.NewTLSTestServer(t, s3emu.Options{Dataset: "r:8:4MiB"})
	get := func() (benchSummary, s3emu.Stats) {
		t.Helper()
		before := ts.Stats()
		r := run(t, nil, "get", "--benchmark", "--json", "--max-concurrent-requests", "16", "--partsize", "1MiB",
			"--endpoint-url", ts.URL, "--region", "us-east-1", "--no-sign-request", "--ca-bundle", ts.CAFile, "s3://"+s3emu.DefaultBucket+"/r/")
		if r.code != 0 {
			t.Fatalf("get --benchmark over TLS: exit %d\n%s", r.code, r.stderr)
		}
		var s benchSummary
		lastJSON(t, r.stdout, &s)
		// A connection that sent no request is counted when the server
		// sees it close, soon after s3pd exits.
		srv := awaitCounts(ts.Server, func(st s3emu.Stats) bool { return st.TLSHandshakes-before.TLSHandshakes >= s.TLSHandshakes })
		srv.TLSHandshakes -= before.TLSHandshakes
		srv.TLSResumed -= before.TLSResumed
		srv.TLSHandshakesAfterFirst -= before.TLSHandshakesAfterFirst
		srv.TLSResumedAfterFirst -= before.TLSResumedAfterFirst
		// The client counts the handshakes of the dials its requests
		// trace; a dial the transport finishes for a request that took
		// another connection meanwhile goes uncounted there, so on a
		// loaded machine the client may count a few fewer.
		near := func(c, s int64) bool { return c <= s && c*10 >= s*9 }
		if s.Objects != 8 || !near(s.TLSHandshakes, srv.TLSHandshakes) || !near(s.TLSResumed, srv.TLSResumed) {
			t.Errorf("run counted %d handshakes (%d resumed) for %d objects; the server %d (%d resumed); want 8 objects and the counts within 10%% of the server's",
				s.TLSHandshakes, s.TLSResumed, s.Objects, srv.TLSHandshakes, srv.TLSResumed)
		}
		return s, srv
	}
	_, first := get()
	if first.TLSHandshakesAfterFirst < 8 || first.TLSResumedAfterFirst*10 < first.TLSHandshakesAfterFirst*9 {
		t.Errorf("first run: %d of the %d connections dialled after the first handshake resumed; want at least 8 such connections, 90 %% resumed",
			first.TLSResumedAfterFirst, first.TLSHandshakesAfterFirst)
	}
	if second, _ := get(); second.TLSHandshakes < 8 || second.TLSResumed < second.TLSHandshakes-1 {
		t.Errorf("second run: %d of %d handshakes resumed; want all but its first", second.TLSResumed, second.TLSHandshakes)
	}
}
