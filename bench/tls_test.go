package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// tlsServer is an emulator child serving HTTPS and the environment that
// makes every contender trust it.
type tlsServer struct {
	endpoint string
	// env points Go's system roots at the emulator's certificate alone
	// (SSL_CERT_FILE, and an empty SSL_CERT_DIR so no directory of
	// authorities is read): every contender trusts it the same way, with
	// no flag of its own, and none parses a bundle the others do not.
	env []string
}

// startTLSServer is startServer over HTTPS.
func startTLSServer(tb testing.TB, dataset string) tlsServer {
	tb.Helper()
	dir := tb.TempDir()
	ca, roots := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "no-roots")
	if err := os.Mkdir(roots, 0o755); err != nil {
		tb.Fatal(err)
	}
	endpoint := startServerEnv(tb, dataset, 0, 0, "S3PD_BENCH_TLS_CA="+ca)
	if !strings.HasPrefix(endpoint, "https://") {
		tb.Fatalf("the TLS emulator serves %s, want https", endpoint)
	}
	return tlsServer{endpoint: endpoint, env: []string{"SSL_CERT_FILE=" + ca, "SSL_CERT_DIR=" + roots}}
}

// withEnv is c with extra environment.
func withEnv(c contender, env []string) contender {
	return contender{c.name, func(tb testing.TB, endpoint string, d dataset, dest string) ([]string, []string) {
		argv, cenv := c.cmd(tb, endpoint, d, dest)
		return argv, append(cenv, env...)
	}}
}

// tlsContenders are those BenchmarkLoopbackTLS runs: the bare clients
// (the machine's ceiling over TLS), s3pd with the bare clients' 16
// ranges in flight and with no flags (its window finds its own), and the
// SDK's transfer manager.
var tlsContenders = []contender{
	{"bare", selfClient("bare")},
	{"s3pd", tuned},
	{"s3pd-noflags", s3pdGet()},
	{"transfermanager", selfClient("tm")},
}

// tlsOnRequest run only when $S3PD_BENCH_CLIENTS names them:
// s3pd-old-noflags is s3pd-noflags with the binary $S3PD_OLD_BIN;
// bare-again is bare under another name, the harness's own noise.
var tlsOnRequest = []contender{
	{"s3pd-old-noflags", withOldBinary(s3pdGet())},
	{"bare-again", selfClient("bare")},
}

// BenchmarkLoopbackTLS is BenchmarkLoopback over HTTPS: the emulator in a
// child serves TLS 1.3 (HTTP/1.1 only, as S3) with a self-signed RSA
// certificate, and s3pd, the bare clients and the transfer manager fetch
// the same sets into a discard sink and into tmpfs. Its names start with
// scheme=https, so bench/paired keeps its rows apart from
// BenchmarkLoopback's when both run in one round (run.sh:
// BENCH='^BenchmarkLoopback(TLS)?$' for the rows side by side).
func BenchmarkLoopbackTLS(b *testing.B) {
	srv := startTLSServer(b, loopbackSpec)
	var cs []contender
	for _, c := range append(slices.Clone(tlsContenders), tlsOnRequest...) {
		cs = append(cs, withEnv(c, srv.env))
	}
	for _, sink := range []string{"discard", "tmpfs"} {
		b.Run("scheme=https/sink="+sink, func(b *testing.B) {
			root := ""
			if sink == "tmpfs" {
				root = tmpfsRoot(b)
			}
			for _, d := range loopbackSets {
				b.Run("set="+d.name, func(b *testing.B) {
					for _, c := range rotate(cs[:len(tlsContenders)], cs[len(tlsContenders):], round()) {
						b.Run("client="+c.name, func(b *testing.B) { measure(b, srv.endpoint, d, root, c) })
					}
				})
			}
		})
	}
}

// TestContendersOverTLS runs BenchmarkLoopbackTLS's contenders once each
// against an HTTPS emulator child on a small set: each trusts the
// certificate through the environment alone and moves every byte; s3pd
// without that environment cannot reach the server (so the trust is the
// environment's, not a skipped check).
func TestContendersOverTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("builds s3pd and starts child processes")
	}
	srv := startTLSServer(t, "big:2:9MiB")
	d := dataset{name: "2x9MiB", prefix: "big/", objects: 2, size: 9 << 20, workers: 2, threads: 2, tmConc: 2}
	home := t.TempDir()
	for _, c := range tlsContenders {
		t.Run(c.name, func(t *testing.T) {
			dest := t.TempDir()
			argv, env := withEnv(c, srv.env).cmd(t, srv.endpoint, d, dest)
			runChild(t, home, env, argv...)
			if got, err := treeBytes(dest); err != nil || got != d.bytes() {
				t.Errorf("landed %d bytes (%v), want %d", got, err, d.bytes())
			}
		})
	}
	argv, _ := tuned(t, srv.endpoint, d, "")
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = childEnv(home)
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "certificate") {
		t.Errorf("s3pd without the certificate's environment: %v, %s; want a certificate failure", err, out)
	}
}
