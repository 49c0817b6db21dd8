package e2e

import (
	"bytes"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// webSize is the file the http(s):// tests serve: 20 MiB and a bit, 21
// parts of 1 MiB.
const webSize = 20<<20 + 4321

// webFile is an in-process web server on 127.0.0.1 serving files by
// path, with the knobs a test turns: Range ignored, the file changed
// after some GETs, the bytes slowed after some were sent.
type webFile struct {
	srv *httptest.Server
	mu  sync.Mutex
	// files are the bytes served at each path, and their ETags.
	files map[string][]byte
	etags map[string]string
	// noRanges answers every GET with 200 and the whole file.
	noRanges bool
	// changeAfter, when > 0, replaces every file with other bytes and
	// another ETag once that many GETs were answered.
	changeAfter int
	// slowAfter, when > 0, sends every byte past that many (of all the
	// GETs together) at about 256 KiB/s per request.
	slowAfter atomic.Int64
	// fail503 answers the GETs after the first with 503 while it is
	// above 0, counting down: retries the run logs.
	fail503 atomic.Int64
	gets    atomic.Int64
	sent    atomic.Int64
	ranges  atomic.Int64
}

func newWebFile(t *testing.T, configure func(*webFile)) *webFile {
	t.Helper()
	w := &webFile{files: map[string][]byte{}, etags: map[string]string{}}
	if configure != nil {
		configure(w)
	}
	w.srv = httptest.NewServer(http.HandlerFunc(w.serve))
	t.Cleanup(w.srv.Close)
	return w
}

// add serves data at path (a leading "/").
func (w *webFile) add(path string, data []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.files[path], w.etags[path] = data, fmt.Sprintf(`"%x"`, md5.Sum(data))
}

func (w *webFile) url(path string) string { return w.srv.URL + path }

func (w *webFile) serve(rw http.ResponseWriter, r *http.Request) {
	n := int(w.gets.Add(1))
	w.mu.Lock()
	if w.changeAfter > 0 && n == w.changeAfter+1 {
		for p, b := range w.files {
			w.files[p] = bytes.Repeat([]byte("changed!"), len(b)/8)
			w.etags[p] = `"changed"`
		}
	}
	data, ok := w.files[r.URL.Path]
	etag := w.etags[r.URL.Path]
	w.mu.Unlock()
	if !ok {
		http.NotFound(rw, r)
		return
	}
	if n > 1 && w.fail503.Add(-1) >= 0 {
		http.Error(rw, "slow down", http.StatusServiceUnavailable)
		return
	}
	rw.Header().Set("ETag", etag)
	out := io.Writer(&slowWriter{w: rw, f: w})
	if w.noRanges {
		rw.Header().Set("Content-Length", fmt.Sprint(len(data)))
		rw.WriteHeader(http.StatusOK)
		out.Write(data)
		return
	}
	if r.Header.Get("Range") != "" {
		w.ranges.Add(1)
	}
	// ServeContent answers Range, If-Match and If-Range as a web server
	// does; the slow writer paces its body.
	http.ServeContent(slowResponse{rw, out}, r, "", time.Time{}, bytes.NewReader(data))
}

// slowResponse is a ResponseWriter whose body goes through w.
type slowResponse struct {
	http.ResponseWriter
	w io.Writer
}

func (s slowResponse) Write(b []byte) (int, error) { return s.w.Write(b) }

// slowWriter counts the bytes sent, and past slowAfter sends 16 KiB
// every 64 ms.
type slowWriter struct {
	w io.Writer
	f *webFile
}

func (s *slowWriter) Write(b []byte) (int, error) {
	written := 0
	for len(b) > 0 {
		chunk := b
		after := s.f.slowAfter.Load()
		slow := after > 0 && s.f.sent.Load() >= after
		if slow && len(chunk) > 16<<10 {
			chunk = chunk[:16<<10]
		}
		n, err := s.w.Write(chunk)
		written += n
		s.f.sent.Add(int64(n))
		if err != nil {
			return written, err
		}
		b = b[n:]
		if slow {
			time.Sleep(64 * time.Millisecond)
		}
	}
	return written, nil
}

// webGet runs s3pd get with 1 MiB parts and args.
func webGet(t *testing.T, args ...string) result {
	t.Helper()
	return run(t, nil, append([]string{"get", "--partsize", "1MiB", "--threads", "4"}, args...)...)
}

// landedAs fails t unless path holds want.
func landedAs(t *testing.T, path string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read what landed: %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: %d bytes (sha256 %s), want the %d served (sha256 %s)", path, len(got), sum(got), len(want), sum(want))
	}
}

// nothingAt fails t if anything is at path.
func nothingAt(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s exists after a failed run (stat: %v)", path, err)
	}
}

// webObjects are the object lines of a --json run's stdout.
func webObjects(stdout string) []map[string]any {
	var out []map[string]any
	for _, l := range strings.Split(stdout, "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["type"] == "object" {
			out = append(out, m)
		}
	}
	return out
}

// TestHTTPRangedLandsInParts: a server that takes Range is fetched in
// several ranged GETs and the file lands byte for byte; the summary says
// it was not verified, and why, without --checksum.
func TestHTTPRangedLandsInParts(t *testing.T) {
	data := randomBytes(41, webSize)
	w := newWebFile(t, nil)
	w.add("/models/model.bin", data)
	dest := t.TempDir()
	r := webGet(t, w.url("/models/model.bin"), dest)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	landedAs(t, filepath.Join(dest, "model.bin"), data)
	if n := w.ranges.Load(); n < 10 {
		t.Fatalf("%d ranged GETs for 21 parts: not fetched in parts", n)
	}
	if !strings.Contains(r.stdout, "unverified: 1 object") || !strings.Contains(r.stdout, "--checksum") {
		t.Fatalf("summary does not say the file is unverified and what would check it:\n%s", r.stdout)
	}
}

// TestHTTPWithoutRangesIsOneGET: a server that answers 200 to every GET
// is read as one stream: one request, and the file lands right.
func TestHTTPWithoutRangesIsOneGET(t *testing.T) {
	data := randomBytes(42, webSize)
	w := newWebFile(t, func(w *webFile) { w.noRanges = true })
	w.add("/plain.bin", data)
	dest := filepath.Join(t.TempDir(), "renamed.bin")
	r := webGet(t, w.url("/plain.bin"), dest)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	landedAs(t, dest, data)
	if n := w.gets.Load(); n != 1 {
		t.Fatalf("%d GETs, want 1: a server without Range is one stream", n)
	}
}

// TestHTTPFileChangedMidRunFails: the file changes on the server after
// the first GETs: the run fails, and nothing is at the final name.
func TestHTTPFileChangedMidRunFails(t *testing.T) {
	w := newWebFile(t, func(w *webFile) { w.changeAfter = 3 })
	w.add("/f.bin", randomBytes(43, webSize))
	dest := t.TempDir()
	r := webGet(t, w.url("/f.bin"), dest)
	if r.code == 0 {
		t.Fatalf("exit 0 for a file that changed mid-run\n%s", r.stdout)
	}
	if !strings.Contains(r.stderr, "modified") {
		t.Fatalf("stderr does not say the file was modified:\n%s", r.stderr)
	}
	nothingAt(t, filepath.Join(dest, "f.bin"))
}

// TestHTTPInterruptedRunResumes: a run stopped by Ctrl-C mid-file keeps
// what landed; the rerun fetches only the rest, and the file lands
// right.
func TestHTTPInterruptedRunResumes(t *testing.T) {
	data := randomBytes(44, webSize)
	w := newWebFile(t, func(w *webFile) { w.slowAfter.Store(6 << 20) })
	w.add("/big.bin", data)
	dest := t.TempDir()
	cmd := exec.Command(bin, "get", "--partsize", "1MiB", "--threads", "4", w.url("/big.bin"), dest)
	cmd.Env = baseEnv(t)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	waitForJournaled(t, dest, 2<<20)
	cmd.Process.Signal(syscall.SIGINT)
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Fatalf("exit %d after Ctrl-C, want 130\n%s", code, stderr.String())
	}
	nothingAt(t, filepath.Join(dest, "big.bin"))
	first := w.sent.Load()
	if first >= webSize {
		t.Fatalf("the first run was sent %d bytes, the whole file: nothing left to resume", first)
	}

	w.slowAfter.Store(0)
	w.sent.Store(0)
	r := webGet(t, "--json", w.url("/big.bin"), dest)
	if r.code != 0 {
		t.Fatalf("rerun: exit %d\n%s", r.code, r.stderr)
	}
	landedAs(t, filepath.Join(dest, "big.bin"), data)
	sum := summaryOf(t, r.stdout)
	resumed, _ := sum["resumed_bytes"].(float64)
	if resumed < 1<<20 {
		t.Fatalf("rerun resumed %v bytes, want at least a part: %v", sum["resumed_bytes"], sum)
	}
	// The rerun's probe is its first part, fetched again; the rest of
	// what it fetched is what the first run did not keep.
	if again := w.sent.Load(); again > webSize-int64(resumed)+2<<20 {
		t.Fatalf("rerun fetched %d bytes of %d, %d of them resumed: it fetched again what was kept", again, webSize, int64(resumed))
	}
}

// TestHTTPChecksum: a wrong --checksum fails with one line and leaves
// nothing at DEST; a right one (sha256, md5) says verified in --json;
// --checksum with an s3:// source is a usage error.
func TestHTTPChecksum(t *testing.T) {
	data := randomBytes(45, 4<<20+17)
	w := newWebFile(t, nil)
	w.add("/f.bin", data)
	sha := sha256.Sum256(data)
	wrong := sha
	wrong[3] ^= 1

	dest := filepath.Join(t.TempDir(), "f.bin")
	r := webGet(t, "--checksum", "sha256:"+hex.EncodeToString(wrong[:]), w.url("/f.bin"), dest)
	if r.code == 0 {
		t.Fatalf("exit 0 with a wrong checksum\n%s", r.stdout)
	}
	if lines := strings.Split(strings.TrimSpace(r.stderr), "\n"); len(lines) != 1 || !strings.Contains(lines[0], "checksum") {
		t.Fatalf("stderr for a wrong checksum: %q, want one line naming the checksum", r.stderr)
	}
	nothingAt(t, dest)

	m := md5.Sum(data)
	for _, c := range []string{"sha256:" + hex.EncodeToString(sha[:]), "md5:" + hex.EncodeToString(m[:])} {
		r = webGet(t, "--json", "--overwrite", "--checksum", c, w.url("/f.bin"), dest)
		if r.code != 0 {
			t.Fatalf("--checksum %s: exit %d\n%s", c, r.code, r.stderr)
		}
		landedAs(t, dest, data)
		objs := webObjects(r.stdout)
		alg, _, _ := strings.Cut(c, ":")
		if len(objs) != 1 || objs[0]["verification"] != "verified" || fmt.Sprint(objs[0]["checksums"]) != "["+alg+"]" {
			t.Fatalf("--checksum %s: object lines %v, want one verified by %s", c, objs, alg)
		}
	}

	for _, args := range [][]string{
		{"--checksum", "sha256:" + hex.EncodeToString(sha[:]), "s3://bucket/key", t.TempDir()},
		{"--checksum", "sha256:abc", w.url("/f.bin"), t.TempDir()},
		{"--version-id", "v1", w.url("/f.bin"), t.TempDir()},
		{"--delete", w.url("/f.bin"), t.TempDir()},
	} {
		r := run(t, nil, append([]string{"get"}, args...)...)
		if r.code != 2 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || r.stderr == "" {
			t.Errorf("get %v: exit %d, stderr %q; want exit 2 and one line", args, r.code, r.stderr)
		}
	}
}

// TestHTTPInputFile: --input-file with three URLs lands three files,
// under their URL's name or the name given; a SRC beside it, or a
// --checksum, is a usage error.
func TestHTTPInputFile(t *testing.T) {
	w := newWebFile(t, nil)
	plain := newWebFile(t, func(w *webFile) { w.noRanges = true })
	a, b, c := randomBytes(46, 3<<20+1), randomBytes(47, 1<<20), randomBytes(48, 777)
	w.add("/d/a.bin", a)
	w.add("/d/b.bin", b)
	plain.add("/c.txt", c)
	list := filepath.Join(t.TempDir(), "urls.txt")
	text := "# three files\n" + w.url("/d/a.bin") + "\n" + w.url("/d/b.bin") + " sub/b-renamed.bin\n\n" + plain.url("/c.txt") + "\n"
	if err := os.WriteFile(list, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(t.TempDir(), "new") // created by the run
	r := webGet(t, "--input-file", list, dest)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	sameTree(t, dest, map[string][]byte{"a.bin": a, "sub/b-renamed.bin": b, "c.txt": c})

	for _, args := range [][]string{
		{"--input-file", list, w.url("/d/a.bin"), t.TempDir()},
		{"--input-file", list, "--checksum", "md5:" + strings.Repeat("0", 32), t.TempDir()},
	} {
		r := run(t, nil, append([]string{"get"}, args...)...)
		if r.code != 2 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || r.stderr == "" {
			t.Errorf("get %v: exit %d, stderr %q; want exit 2 and one line", args, r.code, r.stderr)
		}
	}
}

// TestHTTPPresignedURLNeverPrinted: a presigned URL's signature and
// credential appear nowhere in what s3pd prints: not in the summary,
// the --json lines, the per-object lines, the retries logged, or the
// errors of a URL that is refused, missing or unreachable.
func TestHTTPPresignedURLNeverPrinted(t *testing.T) {
	w := newWebFile(t, nil)
	w.add("/b/f.bin", randomBytes(49, 2<<20+3))
	query := "?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=secretcred%2F20260101&X-Amz-Signature=secretsig&X-Amz-Security-Token=secrettoken"
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String() // a port nothing listens on
	l.Close()
	dir := t.TempDir()
	jsonFile := filepath.Join(dir, "out.json")
	for _, tt := range []struct {
		url  string
		ok   bool
		args []string
	}{
		{w.url("/b/f.bin") + query, true, []string{"--json"}},
		{w.url("/b/f.bin") + query, true, []string{"--log-level", "debug", "--overwrite", "--json-file", jsonFile}},
		{w.url("/b/f.bin") + query, true, []string{"--log-level", "debug", "--overwrite", "retry"}},
		{w.url("/b/missing.bin") + query, false, []string{"--json"}},
		{closed + "/f.bin" + query, false, nil},
		{w.url("/b/f.bin") + query, false, []string{"--version-id", "v"}},
	} {
		retries := len(tt.args) > 0 && tt.args[len(tt.args)-1] == "retry"
		if retries {
			tt.args = tt.args[:len(tt.args)-1]
			w.gets.Store(0)
			w.fail503.Store(2)
		}
		r := webGet(t, append(tt.args, tt.url, dir)...)
		if strings.Contains(tt.url, "missing.bin") && r.code != 1 {
			t.Fatalf("get of a missing URL: exit %d, want 1 (no such file, as a missing key)\n%s", r.code, r.stderr)
		}
		if retries && !strings.Contains(r.stderr, "retr") {
			t.Fatalf("get %v: no retry logged of the 503s:\n%s", tt.args, r.stderr)
		}
		if (r.code == 0) != tt.ok {
			t.Fatalf("get %s: exit %d\n%s", tt.url, r.code, r.stderr)
		}
		js, _ := os.ReadFile(jsonFile)
		out := r.stdout + r.stderr + string(js)
		if strings.Contains(out, "secret") {
			t.Fatalf("get %v: a credential of the URL was printed:\n%s", tt.args, out)
		}
		if !strings.Contains(out, "REDACTED") && !strings.Contains(out, "f.bin") {
			t.Fatalf("get %v: the output names no URL at all, so it proves nothing:\n%s", tt.args, out)
		}
	}
}
