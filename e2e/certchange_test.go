package e2e

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/s3pd/s3pd/pkg/s3emu"
)

// TestUploadCertificateChangesMidRun: the server's certificate changes
// between connections of one upload (every answer closes its
// connection, and after the first few handshakes the server shows a
// certificate from an authority the run does not trust). The run fails,
// exit 1, naming the certificate; every object it reports transferred is
// in the store byte for byte, and none is reported done that is not.
func TestUploadCertificateChangesMidRun(t *testing.T) {
	first, firstKey := selfSignedFiles(t, t.TempDir())
	other, otherKey := selfSignedFiles(t, t.TempDir())
	load := func(cert, key string) tls.Certificate {
		c, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	trusted, untrusted := load(first, firstKey), load(other, otherKey)
	s := emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory})
	var handshakes atomic.Int64
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: s.emu.Handler(), ErrorLog: log.New(io.Discard, "", 0)}
	srv.SetKeepAlivesEnabled(false) // a handshake for every request
	// No session tickets: a resumed session would show no certificate.
	go srv.Serve(tls.NewListener(ln, &tls.Config{SessionTicketsDisabled: true, GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
		if handshakes.Add(1) > 4 {
			return &untrusted, nil
		}
		return &trusted, nil
	}}))
	t.Cleanup(func() { srv.Close() })
	tlsStore := *s
	tlsStore.endpoint = "https://" + ln.Addr().String()

	files := map[string][]byte{}
	for i := range 6 {
		files[fmt.Sprintf("f%d", i)] = randomBytes(uint64(50+i), 1000+i)
	}
	dir := writeFiles(t, t.TempDir(), files)
	r := run(t, nil, tlsStore.cmd("copy", "--ca-bundle", first, "--workers", "1", "--json", dir+"/", tlsStore.url("c/"))...)
	if r.code != 1 || !strings.Contains(r.stderr, "does not verify") {
		t.Fatalf("exit %d, want 1 naming the certificate that does not verify\n%s", r.code, r.stderr)
	}
	done := 0
	for _, o := range jsonLines(t, r.stdout)["object"] {
		if o["status"] != "ok" {
			continue
		}
		done++
		name := filepath.Base(o["key"].(string))
		if got := s.get(t, "c/"+name); !bytes.Equal(got, files[name]) {
			t.Errorf("%s is reported transferred, but the store holds other bytes", name)
		}
	}
	t.Logf("%d of %d objects transferred before the certificate changed", done, len(files))
	if sum := jsonLines(t, r.stdout)["summary"]; len(sum) != 1 || sum[0]["objects"] != float64(done) || sum[0]["failed"] == 0.0 {
		t.Errorf("summary %v, want %d transferred and the rest failed", sum, done)
	}
}
