package s3emu

// TB is the part of testing.TB that NewTestServer uses (testing.TB
// satisfies it; s3emu does not import testing into the binary).
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Errorf(format string, args ...any)
	Cleanup(func())
}

// TestServer is an emulator serving on loopback for one test, in the
// manner of net/http/httptest.Server.
type TestServer struct {
	*Server
	// URL is the endpoint, e.g. "http://127.0.0.1:41234".
	URL string
}

// NewTestServer starts an emulator with opts on a free loopback port and
// closes it when the test ends; a failure to start fails the test.
func NewTestServer(t TB, opts Options) *TestServer {
	t.Helper()
	s, err := New(opts)
	if err != nil {
		t.Fatalf("s3emu: new test server: %v", err)
	}
	url, err := s.Start("127.0.0.1:0")
	if err != nil {
		t.Fatalf("s3emu: start test server: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("s3emu: close test server: %v", err)
		}
	})
	return &TestServer{Server: s, URL: url}
}
