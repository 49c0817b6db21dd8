package e2e

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/s3pd/s3pd/pkg/s3emu"
)

// oneLine fails unless stderr is exactly one line starting "s3pd: "
// and holding every part of want, with none of the SDK's chain.
func oneLine(t *testing.T, what, stderr string, want ...string) {
	t.Helper()
	if strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "s3pd: ") {
		t.Errorf("%s: stderr %q, want one line starting s3pd:", what, stderr)
	}
	for _, w := range want {
		if !strings.Contains(stderr, w) {
			t.Errorf("%s: stderr %q lacks %q", what, stderr, w)
		}
	}
	for _, chain := range []string{"StatusCode", "RequestID", "operation error", "request send failed", "dial tcp"} {
		if strings.Contains(stderr, chain) {
			t.Errorf("%s: stderr %q has the SDK's chain (%q)", what, stderr, chain)
		}
	}
}

// noDest fails if dest exists.
func noDest(t *testing.T, what, dest string) {
	t.Helper()
	if _, err := os.Stat(dest); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s: DEST %s was made (%v), want none", what, dest, err)
	}
}

// TestMissingKeyIsReportedOnce: a key that names nothing is one line on
// stderr, not a recap on stdout and a closing line besides; the summary
// counts it. cat says it once too; neither makes a DEST.
func TestMissingKeyIsReportedOnce(t *testing.T) {
	s := emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory})
	s.put(t, "d/a", []byte("a"))
	dest := filepath.Join(t.TempDir(), "dest")
	r := run(t, nil, s.cmd("get", s.url("d/nope.bin"), dest)...)
	if r.code != 1 {
		t.Fatalf("get of a missing key: exit %d, want 1\n%s", r.code, r.stderr)
	}
	if n := strings.Count(r.stderr, "NoSuchKey"); n != 1 || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("get of a missing key: stderr %q, want one line naming NoSuchKey once", r.stderr)
	}
	if strings.Contains(r.stdout, "NoSuchKey") || !strings.Contains(r.stdout, "1 failed") {
		t.Errorf("get of a missing key: stdout %q, want the count and not the failure again", r.stdout)
	}
	noDest(t, "get of a missing key", dest)

	r = run(t, nil, s.cmd("cat", s.url("d/nope.bin"))...)
	if r.code != 1 || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, "NoSuchKey") || r.stdout != "" {
		t.Errorf("cat of a missing key: exit %d, stdout %q, stderr %q; want 1, nothing, one line", r.code, r.stdout, r.stderr)
	}

	// A bucket that does not exist: nothing transferred, no DEST.
	r = run(t, nil, s.cmd("get", "s3://no-such-bucket/d/", dest)...)
	if r.code != 2 || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, "NoSuchBucket") {
		t.Errorf("get from a missing bucket: exit %d, stderr %q; want 2 and one line", r.code, r.stderr)
	}
	noDest(t, "get from a missing bucket", dest)
	r = run(t, nil, s.cmd("get", "--dry-run", s.url("d/"), dest)...)
	if r.code != 0 {
		t.Errorf("get --dry-run: exit %d\n%s", r.code, r.stderr)
	}
	noDest(t, "get --dry-run", dest)

	// --json still ends with the error line, which counts the failures.
	r = run(t, nil, s.cmd("get", "--json", s.url("d/nope.bin"), dest)...)
	if r.code != 1 || !strings.Contains(r.stdout, `"type":"error","error":"1 of 1 object failed"`) || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("get --json of a missing key: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

// TestUnreachableEndpointIsOneLine: an endpoint that refuses, a host
// that does not resolve, a wrong scheme for the port (either way), an
// untrusted certificate and a certificate for another name each read as
// one line in plain words with the fix, exit 1 in every command, and
// leave no DEST.
func TestUnreachableEndpointIsOneLine(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String()
	ln.Close()
	plain := s3emu.NewTestServer(t, s3emu.Options{Backend: s3emu.BackendMemory})
	tlsEmu := s3emu.NewTLSTestServer(t, s3emu.Options{Backend: s3emu.BackendMemory})
	certFile, keyFile := selfSignedFor(t, t.TempDir(), nil, []string{"s3.example.internal"})
	other := s3emu.NewTestServer(t, s3emu.Options{Backend: s3emu.BackendMemory, TLS: &s3emu.TLSOptions{CertFile: certFile, KeyFile: keyFile}})
	hostPort := func(u string) string { return u[strings.Index(u, "//")+2:] }
	tests := []struct {
		name     string
		endpoint string
		flags    []string
		want     []string
		not      string // what the line must not say
	}{
		{"refused", refused, nil, []string{"cannot reach " + hostPort(refused), "connection refused", "is the server running"}, ""},
		{"no such host", "http://s3pd-e2e.invalid:9000", nil, []string{"cannot reach s3pd-e2e.invalid:9000", "s3pd-e2e.invalid"}, ""},
		{"plain HTTP to an HTTPS port", "http://" + hostPort(tlsEmu.URL), nil,
			[]string{hostPort(tlsEmu.URL) + " speaks HTTPS, not plain HTTP", "https://" + hostPort(tlsEmu.URL)}, "status 400"},
		{"HTTPS to a plain HTTP port", "https://" + hostPort(plain.URL), nil,
			[]string{hostPort(plain.URL) + " speaks plain HTTP, not HTTPS", "http://" + hostPort(plain.URL)}, ""},
		{"untrusted certificate", tlsEmu.URL, nil, []string{"does not verify", "unknown authority", "--ca-bundle", "--no-verify-ssl"}, ""},
		{"certificate for another name", other.URL, []string{"--ca-bundle", certFile},
			[]string{"the certificate of " + hostPort(other.URL) + " is for s3.example.internal, not 127.0.0.1", "--no-verify-ssl"}, "ca_bundle"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, c := range [][]string{
				{"ls", "s3://" + s3emu.DefaultBucket + "/"},
				{"du", "s3://" + s3emu.DefaultBucket + "/p/"},
				{"get", "s3://" + s3emu.DefaultBucket + "/p/", "DEST"},
				{"get", "s3://" + s3emu.DefaultBucket + "/p/k", "DEST"},
				{"cat", "s3://" + s3emu.DefaultBucket + "/p/k"},
				{"copy", "s3://" + s3emu.DefaultBucket + "/p/", "DEST"},
			} {
				dest := filepath.Join(t.TempDir(), "dest")
				args := append([]string{c[0], "--no-progress", "--no-sign-request", "--endpoint-url", tt.endpoint}, tt.flags...)
				for _, a := range c[1:] {
					args = append(args, strings.ReplaceAll(a, "DEST", dest))
				}
				r := run(t, []string{"AWS_CA_BUNDLE="}, args...)
				what := strings.Join(c, " ")
				if r.code != 1 {
					t.Errorf("%s: exit %d, want 1\n%s", what, r.code, r.stderr)
				}
				oneLine(t, what, r.stderr, tt.want...)
				if tt.not != "" && strings.Contains(r.stderr, tt.not) {
					t.Errorf("%s: stderr %q says %q", what, r.stderr, tt.not)
				}
				noDest(t, what, dest)
			}
		})
	}
}

// TestNoVerifySSLWarnsOnce: --no-verify-ssl works over HTTPS and says
// once on stderr that certificates go unchecked.
func TestNoVerifySSLWarnsOnce(t *testing.T) {
	ts := s3emu.NewTLSTestServer(t, s3emu.Options{Dataset: "v:3:1MiB"})
	st := &store{name: "emulator over TLS", endpoint: ts.URL, bucket: s3emu.DefaultBucket, emu: ts.Server}
	r := run(t, []string{"AWS_CA_BUNDLE="}, st.cmd("get", "--no-verify-ssl", st.url("v/"), t.TempDir())...)
	if r.code != 0 {
		t.Fatalf("get --no-verify-ssl: exit %d\n%s", r.code, r.stderr)
	}
	if n := strings.Count(r.stderr, "no_verify_ssl"); n != 1 || !strings.Contains(r.stderr, "certificate is not checked") {
		t.Errorf("get --no-verify-ssl: stderr %q, want one warning that the certificate is not checked", r.stderr)
	}
	r = run(t, nil, st.cmd("ls", "--no-verify-ssl", st.url("v/"))...)
	if r.code != 0 || strings.Count(r.stderr, "no_verify_ssl") != 1 {
		t.Errorf("ls --no-verify-ssl: exit %d, stderr %q, want 0 and one warning", r.code, r.stderr)
	}
}
