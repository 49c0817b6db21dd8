package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/s3pd/s3pd/pkg/s3emu"
)

// tlsStore is the emulator over HTTPS, with a certificate no system
// authority signed: a bucket of synthetic objects (bench) and one in
// memory (e2e) that copies write to.
func tlsStore(t *testing.T, opts s3emu.Options) (*s3emu.TestServer, []string) {
	t.Helper()
	opts.Buckets = append(opts.Buckets, "e2e")
	ts := s3emu.NewTLSTestServer(t, opts)
	return ts, []string{"--endpoint-url", ts.URL, "--region", "us-east-1", "--no-sign-request"}
}

// TestTLSSettingsEveryCommand: every command that talks to S3 checks
// certificates as the ca_bundle and no_verify_ssl settings say, from
// whichever source sets them; without them, a certificate no system
// authority signed fails at once, in one line that says what to do,
// with no retry.
func TestTLSSettingsEveryCommand(t *testing.T) {
	ts, base := tlsStore(t, s3emu.Options{Dataset: "t:3:300KiB"})
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "f"), randomBytes(7, 100<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	commands := []struct {
		name string
		args func(t *testing.T) []string
	}{
		{"get", func(t *testing.T) []string { return []string{"get", "--quiet", "s3://bench/t/", t.TempDir()} }},
		{"copy S3 to local", func(t *testing.T) []string { return []string{"copy", "--quiet", "s3://bench/t/", t.TempDir()} }},
		{"copy local to S3", func(t *testing.T) []string { return []string{"copy", "--quiet", src + "/", "s3://e2e/up/"} }},
		{"copy S3 to S3", func(t *testing.T) []string { return []string{"copy", "--quiet", "s3://bench/t/", "s3://e2e/cp/"} }},
		{"ls", func(t *testing.T) []string { return []string{"ls", "s3://bench/t/"} }},
		{"du", func(t *testing.T) []string { return []string{"du", "s3://bench/t/"} }},
		{"cat", func(t *testing.T) []string { return []string{"cat", "s3://bench/t/00000000"} }},
		{"bench", func(t *testing.T) []string { return []string{"bench", "--quiet", "s3://bench/t/"} }},
		{"bench --sweep", func(t *testing.T) []string {
			return []string{"bench", "--sweep", "--sweep-time", "200ms", "--sweep-parts", "1MiB", "--sweep-requests", "2", "s3://bench/t/"}
		}},
		{"get --manifest in S3", func(t *testing.T) []string {
			return []string{"get", "--quiet", "--manifest", "s3://e2e/manifest.txt", "s3://bench/t/", t.TempDir()}
		}},
		{"get --shard", func(t *testing.T) []string {
			return []string{"get", "--quiet", "--shard", "0/2", "s3://bench/t/", t.TempDir()}
		}},
	}
	// The manifest the manifest row reads, uploaded over HTTPS.
	manifest := filepath.Join(t.TempDir(), "manifest.txt")
	if err := os.WriteFile(manifest, []byte("t/00000000\nt/00000002\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := run(t, []string{"AWS_CA_BUNDLE=" + ts.CAFile}, append([]string{"copy", "--quiet", manifest, "s3://e2e/manifest.txt"}, base...)...); r.code != 0 {
		t.Fatalf("upload the manifest: exit %d\n%s", r.code, r.stderr)
	}
	trust := []struct {
		name string
		// setup returns the extra arguments and environment.
		setup func(t *testing.T, home string) ([]string, []string)
		ok    bool
	}{
		{"system authorities", func(*testing.T, string) ([]string, []string) { return nil, nil }, false},
		{"--ca-bundle", func(*testing.T, string) ([]string, []string) { return []string{"--ca-bundle", ts.CAFile}, nil }, true},
		{"AWS_CA_BUNDLE", func(*testing.T, string) ([]string, []string) { return nil, []string{"AWS_CA_BUNDLE=" + ts.CAFile} }, true},
		{"s3pd config file", func(t *testing.T, home string) ([]string, []string) {
			cfg := filepath.Join(home, "s3pd.yaml")
			if err := os.WriteFile(cfg, []byte("ca_bundle: "+ts.CAFile+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			return nil, []string{"S3PD_CONFIG=" + cfg}
		}, true},
		{"S3PD_NO_VERIFY_SSL", func(*testing.T, string) ([]string, []string) { return nil, []string{"S3PD_NO_VERIFY_SSL=true"} }, true},
	}
	for _, c := range commands {
		for _, tr := range trust {
			t.Run(c.name+"/"+tr.name, func(t *testing.T) {
				args, env := tr.setup(t, t.TempDir())
				// AWS_CA_BUNDLE of the machine, which baseEnv passes on,
				// is overridden: the test decides what is trusted.
				env = append([]string{"AWS_CA_BUNDLE="}, env...)
				before := ts.Stats()
				start := time.Now()
				r := run(t, env, append(append(c.args(t), base...), args...)...)
				took := time.Since(start)
				if ok := r.code == 0; ok != tr.ok {
					t.Fatalf("exit %d, want success %v\n%s", r.code, tr.ok, r.stderr)
				}
				if tr.ok {
					return
				}
				if !strings.Contains(r.stderr, "does not verify") || !strings.Contains(r.stderr, "ca_bundle") ||
					strings.Contains(r.stderr, "operation error") || strings.Contains(r.stderr, "exceeded maximum number of attempts") {
					t.Errorf("want one line naming the certificate and ca_bundle, no SDK chain; got:\n%s", r.stderr)
				}
				// One failed handshake per connection tried: no retry.
				if failed := ts.Stats().TLSHandshakeErrors - before.TLSHandshakeErrors; failed > 2 || took > 10*time.Second {
					t.Errorf("%d failed handshakes in %v: the certificate failure was retried", failed, took)
				}
			})
		}
	}
}

// TestTLSResumesSessions: connections a run opens after its first
// handshake resume the session (the server counts them) instead of a
// full handshake each, and the run speaks HTTP/1.1.
func TestTLSResumesSessions(t *testing.T) {
	faults, err := s3emu.ParseFaults("key=* range=bytes=0-1048575 attempt=1 action=reset:1000; key=* range=bytes=1048576-2097151 attempt=1 action=reset:1000")
	if err != nil {
		t.Fatal(err)
	}
	ts, base := tlsStore(t, s3emu.Options{Dataset: "t:4:2MiB", Faults: faults})
	dest := t.TempDir()
	r := run(t, []string{"AWS_CA_BUNDLE=" + ts.CAFile}, append([]string{"get", "--quiet", "--max-concurrent-requests", "2",
		"--partsize", "1MiB", "s3://bench/t/", dest}, base...)...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	st := ts.Stats()
	if st.FaultsInjected == 0 || st.TLSHandshakesAfterFirst == 0 {
		t.Fatalf("%d faults, %d handshakes after the first: the run did not reconnect", st.FaultsInjected, st.TLSHandshakesAfterFirst)
	}
	// A connection dialled while the first handshake's ticket is on its
	// way cannot resume; the later ones must.
	if st.TLSResumedAfterFirst*2 < st.TLSHandshakesAfterFirst {
		t.Errorf("%d of %d handshakes after the first resumed, want most", st.TLSResumedAfterFirst, st.TLSHandshakesAfterFirst)
	}
}
