package s3emu

import (
	"context"
	"crypto/tls"
	"net/http"
	"path/filepath"
)

// TB is the part of testing.TB that NewTestServer uses (testing.TB
// satisfies it; s3emu does not import testing into the binary).
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Errorf(format string, args ...any)
	Cleanup(func())
	TempDir() string
}

// TestServer is an emulator serving on loopback for one test, in the
// manner of net/http/httptest.Server.
type TestServer struct {
	*Server
	// URL is the endpoint, e.g. "http://127.0.0.1:41234"; empty when the
	// server was not started (Unstarted).
	URL string
	// CAFile is a PEM file of the served certificate, what a client is
	// given as --ca-bundle; empty without TLS.
	CAFile string
}

// Client returns an HTTP/1.1 client that trusts the server's
// certificate (any client without TLS).
func (ts *TestServer) Client() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.ForceAttemptHTTP2 = false
	if ts.TLS() {
		tr.TLSClientConfig = &tls.Config{RootCAs: ts.CertPool()}
	}
	return &http.Client{Transport: tr}
}

// TestOption changes how NewTestServer starts the emulator.
type TestOption func(*testStart)

type testStart struct {
	prepare   bool
	unstarted bool
	tls       bool
	addr      string
	within    func(start func() error) error
}

// Prepared computes the synthetic objects' ETags and checksums before
// the server starts, so that a timed transfer does not pay for them.
func Prepared() TestOption { return func(s *testStart) { s.prepare = true } }

// OverTLS serves HTTPS with a self-signed ECDSA certificate (quick to
// make) when the options name no TLS of their own.
func OverTLS() TestOption { return func(s *testStart) { s.tls = true } }

// Unstarted leaves the server without a listener, as
// httptest.NewUnstartedServer: the test serves its Handler itself.
func Unstarted() TestOption { return func(s *testStart) { s.unstarted = true } }

// ListenWithin makes the server listen on addr, with the listening socket
// made by start, which within calls where the socket must live (inside a
// network namespace, say); within returns start's error.
func ListenWithin(addr string, within func(start func() error) error) TestOption {
	return func(s *testStart) { s.addr, s.within = addr, within }
}

// NewTestServer starts an emulator with opts on a free loopback port (or
// as the options say) and closes it when the test ends; a failure to
// start fails the test.
func NewTestServer(t TB, opts Options, options ...TestOption) *TestServer {
	t.Helper()
	how := testStart{addr: "127.0.0.1:0", within: func(start func() error) error { return start() }}
	for _, o := range options {
		o(&how)
	}
	if how.tls && opts.TLS == nil {
		opts.TLS = &TLSOptions{Key: KeyECDSA}
	}
	s, err := New(opts)
	if err != nil {
		t.Fatalf("s3emu: new test server: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("s3emu: close test server: %v", err)
		}
	})
	if how.prepare {
		if err := s.Prepare(context.Background()); err != nil {
			t.Fatalf("s3emu: prepare test server: %v", err)
		}
	}
	ts := &TestServer{Server: s}
	if s.TLS() {
		ts.CAFile = filepath.Join(t.TempDir(), "s3emu-ca.pem")
		if err := s.WriteCertificate(ts.CAFile); err != nil {
			t.Fatalf("s3emu: %v", err)
		}
	}
	if how.unstarted {
		return ts
	}
	err = how.within(func() error {
		var err error
		ts.URL, err = s.Start(how.addr)
		return err
	})
	if err != nil {
		t.Fatalf("s3emu: start test server: %v", err)
	}
	return ts
}

// NewTLSTestServer is NewTestServer over HTTPS: its URL is https, its
// CAFile the certificate to trust, its Client one that trusts it, and its
// Stats count the handshakes and resumptions.
func NewTLSTestServer(t TB, opts Options, options ...TestOption) *TestServer {
	t.Helper()
	return NewTestServer(t, opts, append(options, OverTLS())...)
}

// Serve prepares srv's synthetic objects, starts it on addr, hands its
// endpoint to ready, and serves until ctx ends: an emulator for a process
// of its own (a benchmark's server), which no test owns.
func Serve(ctx context.Context, srv *Server, addr string, ready func(endpoint string)) error {
	if err := srv.Prepare(ctx); err != nil {
		return err
	}
	endpoint, err := srv.Start(addr)
	if err != nil {
		return err
	}
	ready(endpoint)
	<-ctx.Done()
	return srv.Close()
}
