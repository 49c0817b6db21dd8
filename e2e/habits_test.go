package e2e

import (
	"encoding/pem"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/s3pd/s3pd/pkg/s3emu"
)

// TestTLSFlags: against an HTTPS endpoint with a certificate no system
// authority signed, a get fails, and succeeds with --ca-bundle naming the
// certificate or with --no-verify-ssl.
func TestTLSFlags(t *testing.T) {
	s := emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory})
	data := randomBytes(41, 300<<10)
	s.put(t, "tls/obj", data)
	srv := httptest.NewTLSServer(s.emu.Handler())
	t.Cleanup(srv.Close)
	bundle := filepath.Join(t.TempDir(), "ca.pem")
	cert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(bundle, cert, 0o644); err != nil {
		t.Fatal(err)
	}
	base := []string{"get", "--endpoint-url", srv.URL, "--region", "us-east-1", "--quiet", "--no-sign-request"}
	tests := []struct {
		name  string
		flags []string
		ok    bool
	}{
		{"system authorities", nil, false},
		{"--ca-bundle", []string{"--ca-bundle", bundle}, true},
		{"--no-verify-ssl", []string{"--no-verify-ssl"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dest := t.TempDir()
			args := append(append(append([]string{}, base...), tt.flags...), "--stall-timeout", "5s", s.url("tls/obj"), dest)
			start := time.Now()
			r := run(t, nil, args...)
			// A certificate that does not verify is not retried (ten
			// tries took about 11 s).
			if d := time.Since(start); !tt.ok && d > 5*time.Second {
				t.Errorf("the failure took %v: certificate errors are retried", d)
			}
			if ok := r.code == 0; ok != tt.ok {
				t.Fatalf("exit %d, want success %v\n%s", r.code, tt.ok, r.stderr)
			}
			if tt.ok {
				sameTree(t, dest, map[string][]byte{"obj": data})
			} else if !strings.Contains(r.stderr, "certificate") {
				t.Errorf("the error does not name the certificate: %s", r.stderr)
			}
		})
	}
}

// TestAWSCLIHabits: the AWS CLI's spellings run as s3pd's.
func TestAWSCLIHabits(t *testing.T) {
	s := emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory})
	data := randomBytes(42, 5000)
	s.put(t, "h/a", data)
	t.Run("--dryrun transfers nothing", func(t *testing.T) {
		dest := t.TempDir()
		r := run(t, nil, s.cmd("get", "--dryrun", s.url("h/"), dest)...)
		if r.code != 0 || !strings.Contains(r.stdout, "would fetch: h/a") {
			t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		sameTree(t, dest, nil)
	})
	t.Run("--recursive is a no-op with a note", func(t *testing.T) {
		dest := t.TempDir()
		r := run(t, nil, s.cmd("get", "--recursive", s.url("h/"), dest)...)
		if r.code != 0 || !strings.Contains(r.stderr, "--recursive is not needed") {
			t.Fatalf("exit %d\n%s", r.code, r.stderr)
		}
		sameTree(t, dest, map[string][]byte{"a": data})
	})
	t.Run("--only-show-errors prints nothing on success", func(t *testing.T) {
		r := run(t, nil, s.cmd("get", "--only-show-errors", s.url("h/"), t.TempDir())...)
		if r.code != 0 || r.stdout != "" || r.stderr != "" {
			t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
	})
	t.Run("--debug logs at debug", func(t *testing.T) {
		// Three 500s in a row make quick retries: the first is logged at
		// info, the next ones within a second at debug.
		f := emuStore(t, s3emu.Options{Dataset: "f:1:64KiB", Faults: s3emu.NewFaults(s3emu.Rule{Key: "*", Times: 3, Action: s3emu.Status{Code: 500}})})
		r := run(t, nil, f.cmd("get", "--debug", "--no-progress", f.url("f/"), t.TempDir())...)
		if r.code != 0 || !strings.Contains(r.stderr, "DEBUG") {
			t.Fatalf("exit %d, no debug line on stderr:\n%s", r.code, r.stderr)
		}
	})
}

// TestTLSFlagsForLsAndCat: ls, du and cat reach an HTTPS endpoint with
// a certificate no system authority signed only with --ca-bundle or
// --no-verify-ssl, as get does; without them they fail naming the
// certificate, exit 1, with no retries to wait for.
func TestTLSFlagsForLsAndCat(t *testing.T) {
	s := emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory})
	data := randomBytes(43, 200<<10)
	s.put(t, "tls/obj", data)
	srv := httptest.NewTLSServer(s.emu.Handler())
	t.Cleanup(srv.Close)
	bundle := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(bundle, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"ls", "du", "cat"} {
		for _, tc := range []struct {
			flags []string
			ok    bool
		}{{nil, false}, {[]string{"--no-verify-ssl"}, true}, {[]string{"--ca-bundle", bundle}, true}} {
			args := append([]string{cmd, "--endpoint-url", srv.URL, "--region", "us-east-1", "--no-sign-request"}, tc.flags...)
			if cmd == "cat" {
				args = append(args, "--quiet")
			}
			r := run(t, nil, append(args, s.url("tls/obj"))...)
			if ok := r.code == 0; ok != tc.ok {
				t.Errorf("%s %v: exit %d, want success %v\n%s", cmd, tc.flags, r.code, tc.ok, r.stderr)
				continue
			}
			switch {
			case !tc.ok && !strings.Contains(r.stderr, "certificate"):
				t.Errorf("%s %v: the error does not name the certificate: %s", cmd, tc.flags, r.stderr)
			case tc.ok && cmd == "cat" && r.stdout != string(data):
				t.Errorf("cat %v: %d bytes on stdout, not the object", tc.flags, len(r.stdout))
			case tc.ok && cmd == "ls" && !strings.Contains(r.stdout, "obj"):
				t.Errorf("ls %v: %q does not list the object", tc.flags, r.stdout)
			}
		}
	}
}
