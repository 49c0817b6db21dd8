package cmd

import (
	"strings"
	"testing"
	"time"

	"github.com/s3pd/s3pd/pkg/config"
)

func TestReportSettingsHideCredentials(t *testing.T) {
	s := config.Defaults()
	s.EndpointURL = "https://AKIDEXAMPLE:wJalrXUtnFEMI@minio.example:9000/"
	for _, st := range redactedSettings(s, nil) {
		if strings.Contains(st.Value, "wJalrXUtnFEMI") || strings.Contains(st.Value, "AKIDEXAMPLE") {
			t.Errorf("setting %s shows %q: want credentials redacted", st.Name, st.Value)
		}
		if st.Name == "endpoint_url" && !strings.Contains(st.Value, "minio.example:9000") {
			t.Errorf("endpoint_url shows %q: want the host kept", st.Value)
		}
	}
}

func TestReportFlagsRefuseDest(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		path, dest string
		ok         bool
	}{
		{dir + "/r.html", dir + "/out", true},
		{dir + "/out/r.html", dir + "/out", false},
		{dir + "/out/a/b/r.html", dir + "/out/", false},
		{dir + "/output.html", dir + "/out", true},
		{dir, "", false},                    // a directory
		{dir + "/missing/r.html", "", true}, // created on the way, like DEST
	}
	for _, tt := range tests {
		r := reportFlags{path: tt.path, interval: 1}
		err := r.check(tt.dest)
		if (err == nil) != tt.ok {
			t.Errorf("--report %s with DEST %q: %v, want ok=%v", tt.path, tt.dest, err, tt.ok)
		}
		if err != nil && exitCode(err) != ExitUsage {
			t.Errorf("--report %s: exit %d, want %d", tt.path, exitCode(err), ExitUsage)
		}
	}
}

// The scheme and transport a summary records: S3 itself (no endpoint) is
// HTTPS, the embedded emulator is named by where it runs (its own
// process, or this one), loopback over either scheme carries no card's
// traffic.
func TestSchemeAndTransport(t *testing.T) {
	for _, tt := range []struct {
		endpoint  string
		embedded  bool
		server    serverProcess
		scheme    string
		transport string
		loopback  bool
	}{
		{"", false, nil, "https", "HTTPS", false},
		{"https://s3.example.com", false, nil, "https", "HTTPS", false},
		{"HTTP://minio:9000", false, nil, "http", "plain HTTP", false},
		{"https://127.0.0.1:4431", true, nil, "https", "HTTPS (self-signed, in-process)", true},
		{"http://127.0.0.1:9000", true, nil, "http", "plain HTTP (in-process)", true},
		{"https://127.0.0.1:4431", true, idleServer{}, "https", "HTTPS (self-signed, emulator process)", true},
		{"http://127.0.0.1:9000", true, idleServer{}, "http", "plain HTTP (emulator process)", true},
		{"https://localhost:9000", false, nil, "https", "HTTPS", true},
	} {
		m := &measurement{settings: config.Settings{EndpointURL: tt.endpoint}, embedded: tt.embedded, server: tt.server}
		if got, tr, lo := m.scheme(), m.transport(), loopbackEndpoint(tt.endpoint); got != tt.scheme || tr != tt.transport || lo != tt.loopback {
			t.Errorf("%q (embedded %v): %q, %q, loopback %v; want %q, %q, %v", tt.endpoint, tt.embedded, got, tr, lo, tt.scheme, tt.transport, tt.loopback)
		}
	}
}

// idleServer is a server process that used nothing.
type idleServer struct{}

func (idleServer) cpu() time.Duration { return 0 }
func (idleServer) peakRSSKiB() int64  { return 0 }

// TestTLSLineIsAMeanAndAShare: the handshakes' time, summed over
// connections that handshake at once, is said as a mean per handshake
// and a share of the request time, never as a sum in milliseconds that
// can exceed the run.
func TestTLSLineIsAMeanAndAShare(t *testing.T) {
	var b strings.Builder
	printMeasures(&b, runMeasures{Scheme: "https", Transport: "HTTPS", TLSHandshakes: 258, TLSResumed: 257, TLSHandshakeMS: 44354.8, TLSShare: 0.065})
	want := "tls: over HTTPS; 258 handshakes (257 resumed), 171.9 ms each on average, 6.5% of the request time\n"
	if !strings.Contains(b.String(), want) || strings.Contains(b.String(), "44354.8") {
		t.Errorf("measures:\n%s\nwant the line %q", b.String(), want)
	}
}
