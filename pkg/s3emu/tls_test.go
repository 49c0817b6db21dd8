package s3emu

import (
	"bytes"
	"context"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// tlsGet GETs url with tr and returns the response (body read and
// closed) or fails the test.
func tlsGet(t *testing.T, tr *http.Transport, url string) *http.Response {
	t.Helper()
	resp, err := (&http.Client{Transport: tr}).Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// The TLS server answers HTTP/1.1 to a client that offers HTTP/2, and
// counts handshakes, resumptions (a client with a session cache resumes
// on its second connection, one without never does) and failures.
func TestTLSServesHTTP11AndCountsHandshakes(t *testing.T) {
	ts := NewTLSTestServer(t, Options{Dataset: "s:2:1000"})
	if !strings.HasPrefix(ts.URL, "https://127.0.0.1:") || ts.CAFile == "" {
		t.Fatalf("URL %q, CA file %q; want https on loopback and a CA file", ts.URL, ts.CAFile)
	}
	url := ts.URL + "/" + DefaultBucket + "/s/00000000"
	caching := &http.Transport{ForceAttemptHTTP2: true, TLSClientConfig: &tls.Config{
		RootCAs: ts.CertPool(), ClientSessionCache: tls.NewLRUClientSessionCache(8), NextProtos: []string{"h2", "http/1.1"}}}
	resp := tlsGet(t, caching, url)
	if resp.StatusCode != 200 || resp.ProtoMajor != 1 || resp.TLS == nil || resp.TLS.NegotiatedProtocol != "http/1.1" {
		t.Fatalf("first GET: %d %s, ALPN %q; want 200 over HTTP/1.1", resp.StatusCode, resp.Proto, resp.TLS.NegotiatedProtocol)
	}
	caching.CloseIdleConnections()
	if resp := tlsGet(t, caching, url); !resp.TLS.DidResume {
		t.Errorf("second connection of a client with a session cache did not resume")
	}
	plain := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ts.CertPool()}}
	tlsGet(t, plain, url)
	want := Stats{TLSHandshakes: 3, TLSResumed: 1, TLSHandshakesAfterFirst: 2, TLSResumedAfterFirst: 1}
	if got := tlsCounts(ts.Stats()); got != want {
		t.Errorf("after three connections: %+v, want %+v", got, want)
	}

	// A connection that completes its handshake but sends no request is
	// counted when it closes.
	conn, err := tls.Dial("tcp", strings.TrimPrefix(ts.URL, "https://"), &tls.Config{RootCAs: ts.CertPool()})
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
	want = Stats{TLSHandshakes: 4, TLSResumed: 1, TLSHandshakesAfterFirst: 3, TLSResumedAfterFirst: 1}
	if got := waitTLS(ts, func(s Stats) bool { return s.TLSHandshakes == 4 }); got != want {
		t.Errorf("after a connection without a request: %+v, want %+v", got, want)
	}

	// A client that does not trust the certificate fails its handshake.
	untrusting := &http.Transport{}
	if resp, err := (&http.Client{Transport: untrusting}).Get(url); err == nil {
		resp.Body.Close()
		t.Fatal("a client without the CA got an answer")
	}
	if got := waitTLS(ts, func(s Stats) bool { return s.TLSHandshakeErrors > 0 }); got.TLSHandshakeErrors != 1 || got.TLSHandshakes != 4 {
		t.Errorf("after an untrusting client: %d failed, %d handshakes; want 1 and still 4", got.TLSHandshakeErrors, got.TLSHandshakes)
	}

	// After a reset, the next handshake is a first one again.
	ts.ResetStats()
	plain.CloseIdleConnections()
	tlsGet(t, plain, url)
	if got, want := tlsCounts(ts.Stats()), (Stats{TLSHandshakes: 1}); got != want {
		t.Errorf("after a reset and one connection: %+v, want %+v", got, want)
	}
	for _, c := range []*http.Transport{caching, plain, untrusting} {
		c.CloseIdleConnections()
	}
}

// waitTLS waits up to 10 s for the server's counts to satisfy done (the
// server counts a closed connection when it notices the close) and
// returns them.
func waitTLS(ts *TestServer, done func(Stats) bool) Stats {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, _ := ts.Await(ctx, done) // on timeout, the counts then fail the test
	return tlsCounts(st)
}

func tlsCounts(s Stats) Stats {
	return Stats{TLSHandshakes: s.TLSHandshakes, TLSResumed: s.TLSResumed, TLSHandshakeErrors: s.TLSHandshakeErrors,
		TLSHandshakesAfterFirst: s.TLSHandshakesAfterFirst, TLSResumedAfterFirst: s.TLSResumedAfterFirst}
}

// The AWS SDK, trusting only the emulator's certificate, reads an object
// and its listing over HTTPS; the stats endpoint reports the handshakes.
func TestTLSWithTheSDK(t *testing.T) {
	ts := NewTLSTestServer(t, Options{Dataset: "s:3:4KiB"})
	pemBytes, err := os.ReadFile(ts.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemBytes) {
		t.Fatalf("CA file %s holds no certificate", ts.CAFile)
	}
	hc := awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
		tr.TLSClientConfig = &tls.Config{RootCAs: pool}
	})
	c := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(ts.URL), UsePathStyle: true,
		Credentials: aws.AnonymousCredentials{}, HTTPClient: hc, RetryMaxAttempts: 1})
	ctx := context.Background()
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(DefaultBucket), Key: aws.String("s/00000002")})
	if err != nil {
		t.Fatalf("GetObject over TLS: %v", err)
	}
	body, _ := io.ReadAll(out.Body)
	out.Body.Close()
	if !bytes.Equal(body, synthetic("s/00000002", 0, 4096)) {
		t.Errorf("GetObject over TLS: %d bytes, not the object's content", len(body))
	}
	list, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(DefaultBucket)})
	if err != nil || len(list.Contents) != 3 {
		t.Fatalf("ListObjectsV2 over TLS: %v, %d keys; want 3", err, len(list.Contents))
	}
	resp, err := ts.Client().Get(ts.URL + statsPath)
	if err != nil {
		t.Fatal(err)
	}
	var rep StatsReport
	err = json.NewDecoder(resp.Body).Decode(&rep)
	resp.Body.Close()
	if err != nil || rep.TLSHandshakes < 1 || rep.GetRequests != 1 || rep.ListRequests != 1 {
		t.Errorf("stats: %v, %+v; want at least one handshake, 1 GET and 1 LIST", err, rep.Stats)
	}
}

// A certificate of the user's is served as given, and is reported self-
// signed only when it is its own authority; a self-signed one has an RSA
// key unless ECDSA is asked for.
func TestTLSCertificates(t *testing.T) {
	dir := t.TempDir()
	cert, err := selfSigned(KeyECDSA)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	keyDER, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(certFile, pemOf(cert.Certificate[0]), 0o644)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600)

	ts := NewTestServer(t, Options{Dataset: "s:1:10", TLS: &TLSOptions{CertFile: certFile, KeyFile: keyFile}})
	if !ts.SelfSigned() || !bytes.Equal(ts.CertificatePEM(), pemOf(cert.Certificate[0])) {
		t.Errorf("user certificate: self-signed %v, served PEM equal %v; want true, true", ts.SelfSigned(), bytes.Equal(ts.CertificatePEM(), pemOf(cert.Certificate[0])))
	}
	if resp, err := ts.Client().Get(ts.URL + "/" + DefaultBucket + "/s/00000000"); err != nil {
		t.Errorf("GET with the user's certificate: %v", err)
	} else {
		resp.Body.Close()
	}

	rsaSrv, err := New(Options{TLS: &TLSOptions{}})
	if err != nil {
		t.Fatal(err)
	}
	if k, ok := rsaSrv.tls.cert.PrivateKey.(*rsa.PrivateKey); !ok || k.N.BitLen() != 2048 {
		t.Errorf("default self-signed key %T, want a 2048-bit RSA key", rsaSrv.tls.cert.PrivateKey)
	}
	leaf := rsaSrv.tls.cert.Leaf
	if err := leaf.VerifyHostname("localhost"); err != nil {
		t.Errorf("self-signed certificate: %v", err)
	}
	if err := leaf.VerifyHostname("127.0.0.1"); err != nil {
		t.Errorf("self-signed certificate: %v", err)
	}

	for name, o := range map[string]TLSOptions{
		"cert without key": {CertFile: certFile},
		"missing files":    {CertFile: filepath.Join(dir, "none.pem"), KeyFile: keyFile},
		"key type":         {Key: "dsa"},
	} {
		if _, err := New(Options{TLS: &o}); err == nil || !strings.HasPrefix(err.Error(), "new emulator: tls: ") {
			t.Errorf("%s: %v, want a new emulator: tls: error", name, err)
		}
	}

	plain := NewTestServer(t, Options{Dataset: "s:1:10"})
	if plain.TLS() || plain.CertificatePEM() != nil || plain.CAFile != "" || !strings.HasPrefix(plain.URL, "http://") {
		t.Errorf("plain server: TLS %v, PEM %d bytes, CA file %q, URL %q; want none of TLS", plain.TLS(), len(plain.CertificatePEM()), plain.CAFile, plain.URL)
	}
	if err := plain.WriteCertificate(filepath.Join(dir, "x.pem")); err == nil {
		t.Error("WriteCertificate without TLS succeeded")
	}
}
