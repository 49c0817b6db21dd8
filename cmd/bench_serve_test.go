package cmd

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// runServe runs `bench serve args` until the test ends and returns the
// endpoint it printed and a function that stops it and returns its error
// and remaining output.
func runServe(t *testing.T, args ...string) (endpoint string, stop func() (string, error)) {
	t.Helper()
	endpoint, _, stop = runServeLine(t, args...)
	return endpoint, stop
}

// runServeLine is runServe that also returns the line to paste.
func runServeLine(t *testing.T, args ...string) (endpoint, paste string, stop func() (string, error)) {
	t.Helper()
	pr, pw := io.Pipe()
	f := &Factory{IO: &IOStreams{In: strings.NewReader(""), Out: pw, ErrOut: io.Discard}, Getenv: func(string) string { return "" }}
	c := NewCmdBenchServe(f, nil)
	c.SetArgs(args)
	c.SetOut(io.Discard)
	c.SetErr(io.Discard)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		err := c.ExecuteContext(ctx)
		pw.Close()
		done <- err
	}()
	lines := bufio.NewScanner(pr)
	var first, second string
	if lines.Scan() {
		first = lines.Text()
	}
	if lines.Scan() {
		second = lines.Text()
	}
	stopped := false
	stop = func() (string, error) {
		if stopped {
			return "", nil
		}
		stopped = true
		cancel()
		var rest strings.Builder
		for lines.Scan() {
			rest.WriteString(lines.Text() + "\n")
		}
		return rest.String(), <-done
	}
	t.Cleanup(func() { stop() })
	m := regexp.MustCompile(`at (https?://127\.0\.0\.1:\d+):`).FindStringSubmatch(first)
	if m == nil {
		_, err := stop()
		t.Fatalf("bench serve printed %q, then ended with %v; want its endpoint", first, err)
	}
	if want := "s3pd get s3://bench/ DEST --endpoint-url " + m[1] + " --no-sign-request"; !strings.HasPrefix(strings.TrimSpace(second), want) {
		t.Errorf("second line %q, want %q", second, want)
	}
	return m[1], second, stop
}

func TestBenchServeServesUntilCancelled(t *testing.T) {
	faults := filepath.Join(t.TempDir(), "faults")
	if err := os.WriteFile(faults, []byte("key=d/00000001 action=status:503:SlowDown\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ep, stop := runServe(t, "--listen", "127.0.0.1:0", "--dataset", "d:2:1KiB", "--ttfb", "50ms", "--conn-rate", "90MB", "--faults", faults)
	resp, body, took := timedGet(t, ep+"/bench/d/00000000")
	if resp.StatusCode != 200 || len(body) != 1024 || took < 50*time.Millisecond {
		t.Errorf("GET: status %d, %d bytes in %v; want 200, 1024 bytes, after the 50ms TTFB", resp.StatusCode, len(body), took)
	}
	resp, err := http.Get(ep + "/bench/d/00000001")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 {
		t.Errorf("GET of the faulted key: status %d, want 503", resp.StatusCode)
	}
	rest, err := stop()
	if err != nil {
		t.Errorf("bench serve ended with %v, want nil after cancellation", err)
	}
	if !strings.Contains(rest, "served 2 requests (2 GET") || !strings.Contains(rest, "1 faults injected") {
		t.Errorf("summary %q, want 2 GETs and 1 fault", rest)
	}
	if _, err := http.Get(ep + "/bench/d/00000000"); err == nil {
		t.Error("the emulator still answers after cancellation")
	}
}

func TestBenchServeRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--conn-rate", "fast"},
		{"--dataset", "x"},
		{"--backend", "tape"},
		{"--faults", "/nonexistent/faults"},
		{"--max-in-flight", "-1"},
		{"--prefix-rate", "-5"},
		{"--stall-fraction", "1.5"},
		{"extra-arg"},
		{"--tls-cert", "cert.pem"},
		{"--tls-key", "key.pem"},
		{"--ca-out", "ca.pem"},
		{"--tls", "--tls-key-type", "dsa"},
		{"--tls-cert", "/nonexistent/cert.pem", "--tls-key", "/nonexistent/key.pem"},
		{"--tls", "--tls-key-type", "ecdsa", "--ca-out", "/nonexistent/dir/ca.pem"},
	} {
		f := &Factory{IO: &IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard}, Getenv: func(string) string { return "" }}
		c := NewCmdBenchServe(f, nil)
		c.SetArgs(append([]string{"--listen", "127.0.0.1:0"}, args...))
		c.SetOut(io.Discard)
		c.SetErr(io.Discard)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := c.ExecuteContext(ctx)
		cancel()
		var ee *ExitError
		if !errors.As(err, &ee) || ee.Code != ExitUsage {
			t.Errorf("bench serve %v: %v, want a usage error (exit 2)", args, err)
		}
	}
}

// --prefix-rate answers SlowDown when a prefix's GETs come too fast, and
// --stall-fraction 1 stalls every first GET; the summary counts both.
func TestBenchServeThrottlesAndStalls(t *testing.T) {
	ep, stop := runServe(t, "--listen", "127.0.0.1:0", "--dataset", "d:2:64KiB", "--prefix-rate", "1",
		"--stall-fraction", "1", "--stall-for", "300ms", "--stall-seed", "7")
	resp, body, took := timedGet(t, ep+"/bench/d/00000000")
	if resp.StatusCode != 200 || len(body) != 64<<10 || took < 300*time.Millisecond {
		t.Errorf("first GET: status %d, %d bytes in %v; want 200, 65536 bytes, stalled at least 300ms", resp.StatusCode, len(body), took)
	}
	// One token a second, one held: the next GET of the prefix, well
	// within that second of the first one's end, finds none.
	resp, body, _ = timedGet(t, ep+"/bench/d/00000001")
	if resp.StatusCode != 503 || !strings.Contains(string(body), "<Code>SlowDown</Code>") {
		t.Errorf("second GET: status %d, body %q; want 503 SlowDown", resp.StatusCode, body)
	}
	rest, err := stop()
	if err != nil {
		t.Errorf("bench serve ended with %v", err)
	}
	if !strings.Contains(rest, "1 throttled, 1 stalled") {
		t.Errorf("summary %q, want 1 throttled, 1 stalled", rest)
	}
}

// A port in use is a usage error (exit 2) that names --listen.
func TestBenchServePortTakenIsUsage(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var stderr strings.Builder
	streams := &IOStreams{In: strings.NewReader(""), Out: &strings.Builder{}, ErrOut: &stderr}
	code := Execute(context.Background(), streams, "test", []string{"bench", "serve", "--listen", ln.Addr().String()})
	if code != ExitUsage || !strings.Contains(stderr.String(), "--listen "+ln.Addr().String()) || !strings.Contains(stderr.String(), "address already in use") {
		t.Errorf("exit %d, stderr %q; want 2 and a line naming --listen", code, stderr.String())
	}
}

// --conn-rate reads units as every size and rate flag does: MB is MiB,
// "/s" may be left out, a lower-case b is bits.
func TestParseConnRate(t *testing.T) {
	for in, want := range map[string]int64{"90MB/s": 90 << 20, "90MB": 90 << 20, "90MiB": 90 << 20, "720Mb/s": 90 << 20, "0": 0, "1024": 1024} {
		if got, err := parseConnRate(in); err != nil || got != want {
			t.Errorf("parseConnRate(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	if _, err := parseConnRate("fast"); err == nil {
		t.Error(`parseConnRate("fast") succeeded`)
	}
}

// timedGet GETs url and returns the response, its body and how long
// the whole took.
func timedGet(t *testing.T, url string) (*http.Response, []byte, time.Duration) {
	t.Helper()
	t0 := time.Now()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, body, time.Since(t0)
}

// --tls serves HTTPS, HTTP/1.1 only, with a self-signed certificate in
// the file the pasted line names; the summary counts the handshakes, and
// the temporary file is gone at exit while --ca-out's stays.
func TestBenchServeTLS(t *testing.T) {
	for _, keep := range []bool{false, true} {
		args := []string{"--listen", "127.0.0.1:0", "--dataset", "d:1:1KiB", "--tls", "--tls-key-type", "ecdsa"}
		caOut := filepath.Join(t.TempDir(), "ca.pem")
		if keep {
			args = append(args, "--ca-out", caOut)
		}
		ep, paste, stop := runServeLine(t, args...)
		m := regexp.MustCompile(` --ca-bundle (\S+)$`).FindStringSubmatch(strings.TrimSpace(paste))
		if !strings.HasPrefix(ep, "https://") || m == nil || (keep && m[1] != caOut) {
			t.Fatalf("endpoint %q, line %q; want https and --ca-bundle naming the certificate (%s if kept)", ep, paste, caOut)
		}
		resp, err := trusting(t, m[1]).Get(ep + "/bench/d/00000000")
		if err != nil {
			t.Fatalf("GET trusting %s: %v", m[1], err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || len(body) != 1024 || resp.ProtoMajor != 1 {
			t.Errorf("GET: %d %s with %d bytes, want 200 HTTP/1.1 with 1024", resp.StatusCode, resp.Proto, len(body))
		}
		rest, err := stop()
		if err != nil || !strings.Contains(rest, "TLS: 1 handshakes (0 resumed, 0 failed)") {
			t.Errorf("bench serve ended with %v and %q; want nil and one handshake counted", err, rest)
		}
		if _, err := os.Stat(m[1]); (err == nil) != keep {
			t.Errorf("certificate file %s after exit: %v; want it kept only with --ca-out", m[1], err)
		}
	}
}

// A self-signed certificate of the user's (here the one an earlier
// server wrote, with its key) is served and named as the CA to trust.
func TestBenchServeUserCertificate(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	writeSelfSigned(t, certFile, keyFile)
	ep, paste, stop := runServeLine(t, "--listen", "127.0.0.1:0", "--dataset", "d:1:1KiB", "--tls-cert", certFile, "--tls-key", keyFile)
	if !strings.HasSuffix(strings.TrimSpace(paste), " --ca-bundle "+certFile) {
		t.Errorf("line %q, want --ca-bundle %s", paste, certFile)
	}
	resp, err := trusting(t, certFile).Get(ep + "/bench/d/00000000")
	if err != nil {
		t.Fatalf("GET: %v", err)
	}
	resp.Body.Close()
	stop()
}

// trusting is an HTTP client that trusts the certificates in caFile.
func trusting(t *testing.T, caFile string) *http.Client {
	t.Helper()
	pemBytes, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemBytes) {
		t.Fatalf("%s holds no certificate", caFile)
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
}

// writeSelfSigned writes a self-signed ECDSA certificate for 127.0.0.1
// and its key.
func writeSelfSigned(t *testing.T, certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestBenchServeBeyondLoopbackNeedsAllowRemote: an address other hosts
// can reach is refused (exit 2, naming --allow-remote) unless the flag
// is given; with it the emulator serves and says, before anything else
// on stderr, what it exposes.
func TestBenchServeBeyondLoopbackNeedsAllowRemote(t *testing.T) {
	for _, listen := range []string{"0.0.0.0:0", ":0", "[::]:0", "192.0.2.1:0", "example.com:0"} {
		var stderr bytes.Buffer
		f := &Factory{IO: &IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: &stderr}, Getenv: func(string) string { return "" }}
		c := NewCmdBenchServe(f, nil)
		c.SetArgs([]string{"--listen", listen})
		c.SetOut(io.Discard)
		c.SetErr(io.Discard)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := c.ExecuteContext(ctx)
		cancel()
		var ee *ExitError
		if !errors.As(err, &ee) || ee.Code != ExitUsage || !strings.Contains(err.Error(), "--allow-remote") {
			t.Errorf("--listen %s: %v, want a usage error naming --allow-remote", listen, err)
		}
	}
	for _, listen := range []string{"127.0.0.1:0", "localhost:0", "[::1]:0"} {
		if remote, err := reachableBeyondLoopback(listen); err != nil || remote {
			t.Errorf("%s: remote %v, %v; want loopback", listen, remote, err)
		}
	}
	for _, backend := range []string{"memory", "synthetic"} {
		var stderr lockedBuffer
		pr, pw := io.Pipe()
		f := &Factory{IO: &IOStreams{In: strings.NewReader(""), Out: pw, ErrOut: &stderr}, Getenv: func(string) string { return "" }}
		c := NewCmdBenchServe(f, nil)
		c.SetArgs([]string{"--listen", "0.0.0.0:0", "--allow-remote", "--backend", backend, "--dataset", "d:1:1KiB"})
		c.SetOut(io.Discard)
		c.SetErr(io.Discard)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { err := c.ExecuteContext(ctx); pw.Close(); done <- err }()
		line, _ := bufio.NewReader(pr).ReadString('\n')
		cancel()
		go io.Copy(io.Discard, pr)
		if err := <-done; err != nil || !strings.Contains(line, "serving bucket") {
			t.Fatalf("--allow-remote %s: %v, first line %q", backend, err, line)
		}
		warn := stderr.String()
		for _, want := range []string{"without authentication", "writable", "deletable"} {
			if !strings.Contains(warn, want) {
				t.Errorf("--allow-remote %s: stderr %q does not say %q", backend, warn, want)
			}
		}
	}
}

// lockedBuffer is a bytes.Buffer safe to write from the command's
// goroutine and read from the test's.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestBenchServeNamesEveryBucket: the first line names the buckets
// --bucket adds, not only "bench".
func TestBenchServeNamesEveryBucket(t *testing.T) {
	pr, pw := io.Pipe()
	f := &Factory{IO: &IOStreams{In: strings.NewReader(""), Out: pw, ErrOut: io.Discard}, Getenv: func(string) string { return "" }}
	c := NewCmdBenchServe(f, nil)
	c.SetArgs([]string{"--listen", "127.0.0.1:0", "--backend", "memory", "--bucket", "mybucket"})
	c.SetOut(io.Discard)
	c.SetErr(io.Discard)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { err := c.ExecuteContext(ctx); pw.Close(); done <- err }()
	line, _ := bufio.NewReader(pr).ReadString('\n')
	cancel()
	go io.Copy(io.Discard, pr)
	if err := <-done; err != nil || !strings.Contains(line, `serving buckets "bench", "mybucket" at http://127.0.0.1:`) {
		t.Fatalf("bench serve --bucket mybucket: %v, first line %q", err, line)
	}
}

// TestBenchServeClosedToBrowsers: bench serve refuses a request for a
// foreign Host (DNS rebinding), a CORS preflight and a form upload unless
// asked; --cors-origin grants one origin's pages; a bad origin is a usage
// error.
func TestBenchServeClosedToBrowsers(t *testing.T) {
	do := func(method, url string, hdr map[string]string, host string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(method, url, strings.NewReader(""))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	ep, _ := runServe(t, "--listen", "127.0.0.1:0", "--backend", "memory")
	preflight := map[string]string{"Origin": "http://evil.example", "Access-Control-Request-Method": "PUT"}
	if resp := do(http.MethodGet, ep+"/bench", nil, "evil.example"); resp.StatusCode != http.StatusForbidden {
		t.Errorf("Host evil.example: %d, want 403", resp.StatusCode)
	}
	if resp := do(http.MethodGet, ep+"/bench", nil, "localhost"); resp.StatusCode != http.StatusOK {
		t.Errorf("Host localhost: %d, want 200", resp.StatusCode)
	}
	if resp := do(http.MethodOptions, ep+"/bench/k", preflight, ""); resp.StatusCode != http.StatusForbidden || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("preflight: %d, Access-Control-Allow-Origin %q; want 403 and none", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
	}
	if resp := do(http.MethodPost, ep+"/bench", map[string]string{"Content-Type": "multipart/form-data; boundary=x"}, ""); resp.StatusCode != http.StatusForbidden {
		t.Errorf("form POST: %d, want 403", resp.StatusCode)
	}

	ep, _ = runServe(t, "--listen", "127.0.0.1:0", "--backend", "memory", "--cors-origin", "http://localhost:3000")
	granted := map[string]string{"Origin": "http://localhost:3000", "Access-Control-Request-Method": "PUT"}
	if resp := do(http.MethodOptions, ep+"/bench/k", granted, ""); resp.StatusCode != http.StatusOK || resp.Header.Get("Access-Control-Allow-Origin") != "http://localhost:3000" {
		t.Errorf("preflight of the --cors-origin: %d, Access-Control-Allow-Origin %q", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
	}
	if resp := do(http.MethodOptions, ep+"/bench/k", preflight, ""); resp.StatusCode != http.StatusForbidden {
		t.Errorf("preflight of another origin with --cors-origin: %d, want 403", resp.StatusCode)
	}

	for _, bad := range []string{"localhost:3000", "http://localhost:3000/", "ftp://x"} {
		f := &Factory{IO: &IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard}, Getenv: func(string) string { return "" }}
		c := NewCmdBenchServe(f, nil)
		c.SetArgs([]string{"--listen", "127.0.0.1:0", "--cors-origin", bad})
		c.SetOut(io.Discard)
		c.SetErr(io.Discard)
		err := c.ExecuteContext(context.Background())
		var ee *ExitError
		if !errors.As(err, &ee) || ee.Code != ExitUsage || !strings.Contains(err.Error(), "--cors-origin") {
			t.Errorf("--cors-origin %q: %v, want a usage error naming --cors-origin", bad, err)
		}
	}
}

// TestBenchServeMinPartSize: bench serve refuses, as S3, a multipart
// upload whose first part is under 5 MiB; --min-part-size 0 takes it.
func TestBenchServeMinPartSize(t *testing.T) {
	complete := func(ep string) int {
		t.Helper()
		post := func(url, body string) (int, string) {
			resp, err := http.Post(url, "application/xml", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(b)
		}
		_, b := post(ep+"/bench/mp?uploads", "")
		id := regexp.MustCompile(`<UploadId>([^<]+)</UploadId>`).FindStringSubmatch(b)
		if id == nil {
			t.Fatalf("CreateMultipartUpload answered %q", b)
		}
		var etags []string
		for i := 1; i <= 2; i++ {
			req, _ := http.NewRequest(http.MethodPut, ep+"/bench/mp?partNumber="+string(rune('0'+i))+"&uploadId="+id[1], strings.NewReader("small"))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			etags = append(etags, resp.Header.Get("ETag"))
		}
		code, _ := post(ep+"/bench/mp?uploadId="+id[1], "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>"+etags[0]+
			"</ETag></Part><Part><PartNumber>2</PartNumber><ETag>"+etags[1]+"</ETag></Part></CompleteMultipartUpload>")
		return code
	}
	ep, _ := runServe(t, "--listen", "127.0.0.1:0", "--backend", "memory")
	if code := complete(ep); code != http.StatusBadRequest {
		t.Errorf("two 5-byte parts, default minimum: %d, want 400 EntityTooSmall", code)
	}
	ep, _ = runServe(t, "--listen", "127.0.0.1:0", "--backend", "memory", "--min-part-size", "0")
	if code := complete(ep); code != http.StatusOK {
		t.Errorf("two 5-byte parts, --min-part-size 0: %d, want 200", code)
	}
}
