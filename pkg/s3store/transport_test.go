package s3store

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// isolateAWS keeps the SDK away from the machine's AWS configuration and
// gives it static credentials.
func isolateAWS(t *testing.T) {
	dir := t.TempDir()
	for k, v := range map[string]string{
		"AWS_CONFIG_FILE": filepath.Join(dir, "config"), "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "credentials"),
		"AWS_ACCESS_KEY_ID": "AKIDTEST", "AWS_SECRET_ACCESS_KEY": "secret", "AWS_EC2_METADATA_DISABLED": "true",
		"AWS_CA_BUNDLE": "", "AWS_REGION": "", "AWS_DEFAULT_REGION": "", "AWS_PROFILE": "",
		"AWS_ENDPOINT_URL": "", "AWS_ENDPOINT_URL_S3": "",
	} {
		t.Setenv(k, v)
	}
}

// The transport speaks HTTP/1.1 to a server that offers HTTP/2, and
// refuses a server below TLS 1.2.
func TestTransportHTTP11AndTLSFloor(t *testing.T) {
	h2 := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	h2.EnableHTTP2 = true
	h2.StartTLS()
	t.Cleanup(h2.Close)
	old := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	old.TLS = &tls.Config{MaxVersion: tls.VersionTLS11}
	old.StartTLS()
	t.Cleanup(old.Close)

	tr, err := NewTransport(TransportOptions{Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	req, _ := http.NewRequest(http.MethodGet, h2.URL, nil)
	resp, err := tr.Lane(0).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.ProtoMajor != 1 {
		t.Errorf("against a server offering h2: %s, want HTTP/1.1", resp.Proto)
	}
	req, _ = http.NewRequest(http.MethodGet, old.URL, nil)
	if resp, err := tr.Lane(0).Do(req); err == nil {
		resp.Body.Close()
		t.Errorf("a TLS 1.1 server was accepted")
	}
}

// A CA bundle that cannot be read, or holds no certificate, is an error
// naming it.
func TestTransportCABundleErrors(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "empty.pem")
	if err := os.WriteFile(empty, []byte("not a certificate\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{filepath.Join(t.TempDir(), "missing.pem"), empty} {
		if _, err := NewTransport(TransportOptions{CABundle: path}); err == nil || !strings.Contains(err.Error(), "ca_bundle") {
			t.Errorf("NewTransport(CABundle %s) = %v, want an error naming ca_bundle", path, err)
		}
	}
}

// Uploads and server-side copies take each request over the next lane.
func TestTransportRoundRobin(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(srv.Close)
	var mu sync.Mutex
	dials := map[string]int{}
	lane := func(name string) DialLane {
		return DialLane{Name: name, Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			mu.Lock()
			dials[name]++
			mu.Unlock()
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		}}
	}
	wrapped := map[string]int{} // requests each lane's Wrap decorator saw
	wrap := func(name string, rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			mu.Lock()
			wrapped[name]++
			mu.Unlock()
			return rt.RoundTrip(r)
		})
	}
	tr, err := NewTransport(TransportOptions{Lanes: []DialLane{lane("eth0"), lane("eth1"), lane("eth2")}, Wrap: wrap})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	rr := tr.RoundRobin()
	for range 6 {
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		req.Close = true // a new connection each: the dials show the lanes
		resp, err := rr.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	for _, n := range []string{"eth0", "eth1", "eth2"} {
		if dials[n] != 2 || wrapped[n] != 2 {
			t.Errorf("lane %s dialled %d times and its Wrap saw %d requests of 6, want 2 each (all: %v, %v)", n, dials[n], wrapped[n], dials, wrapped)
		}
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Probe finds the lanes that cannot connect, and Keep drops them.
func TestTransportProbe(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	good := DialLane{Name: "good", Dial: (&net.Dialer{}).DialContext}
	bad := DialLane{Name: "bad", Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
		<-ctx.Done() // a card whose SYNs go nowhere
		return nil, &net.OpError{Op: "dial", Net: network, Err: ctx.Err()}
	}}
	tr, err := NewTransport(TransportOptions{Lanes: []DialLane{good, bad}})
	if err != nil {
		t.Fatal(err)
	}
	failed := tr.Probe(context.Background(), ln.Addr().String(), 50_000_000) // 50 ms
	if len(failed) != 1 || failed["bad"] == nil {
		t.Fatalf("Probe = %v, want only lane bad", failed)
	}
	if dropped := tr.Keep(func(n string) bool { return failed[n] == nil }); len(dropped) != 1 || dropped[0] != "bad" {
		t.Errorf("Keep dropped %v, want [bad]", dropped)
	}
	if got := tr.Names(); len(got) != 1 || got[0] != "good" {
		t.Errorf("lanes after Keep: %v, want [good]", got)
	}
}

// elsewhere is a server a redirect points to; it counts what reaches it.
type elsewhere struct {
	*httptest.Server
	hits atomic.Int64
}

func newElsewhere(t *testing.T) *elsewhere {
	e := &elsewhere{}
	e.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { e.hits.Add(1) }))
	t.Cleanup(e.Close)
	return e
}

// A custom endpoint's redirect, to another host or another port, is not
// followed, by the signed GETs nor by the SDK's calls: the request fails
// with one line naming where the endpoint pointed, and the other server
// never sees the request (nor its Authorization header).
func TestRedirectsStayHome(t *testing.T) {
	isolateAWS(t)
	other := newElsewhere(t)
	otherURL, _ := url.Parse(other.URL)
	for _, status := range []int{301, 302, 307, 308} {
		for _, where := range []string{"other port", "other host"} {
			t.Run(fmt.Sprintf("%d to %s", status, where), func(t *testing.T) {
				var location string
				home := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Location", location+r.URL.RequestURI())
					w.WriteHeader(status)
				}))
				t.Cleanup(home.Close)
				location = other.URL // 127.0.0.1, another port
				if where == "other host" {
					location = "http://localhost:" + otherURL.Port()
				}
				before := other.hits.Load()
				c, err := NewClient(context.Background(), "b", ClientOptions{Region: "us-east-1", EndpointURL: home.URL})
				if err != nil {
					t.Fatal(err)
				}
				src := NewSource(c, Target{Bucket: "b"})
				_, err = src.Open(context.Background(), &transfer.Object{Key: "k", Size: -1}, 0, -1)
				var re *RedirectError
				if !errors.As(err, &re) || re.Status != status || !strings.HasPrefix(re.Location, location) {
					t.Errorf("signed GET: %v, want a RedirectError %d to %s", err, status, location)
				}
				if err != nil && !strings.Contains(err.Error(), "does not follow redirects") {
					t.Errorf("signed GET: %q does not say the redirect is not followed", err)
				}
				_, err = c.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String("b"), Key: aws.String("k")})
				if err == nil {
					t.Errorf("SDK HEAD through a %d: no error", status)
				}
				if n := other.hits.Load() - before; n != 0 {
					t.Errorf("%d requests reached %s: the redirect was followed", n, location)
				}
			})
		}
	}
}

// awsLike is a TLS server that plays S3 in AWS's region eu-west-1 for
// bucket b: a request signed for another region gets the redirect S3
// sends (the 301 with x-amz-bucket-region, the 307 of a new bucket with
// only its Endpoint in the body, or a 400 AuthorizationHeaderMalformed),
// pointing at another host; one signed for eu-west-1 at its host gets
// the object.
type awsLike struct {
	srv   *httptest.Server
	mu    sync.Mutex
	seen  []string // host and signed region of each request
	reply func(w http.ResponseWriter)
}

func newAWSLike(t *testing.T, reply func(w http.ResponseWriter)) *awsLike {
	a := &awsLike{reply: reply}
	a.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		region := signedRegion(r)
		a.mu.Lock()
		a.seen = append(a.seen, r.Host+" "+region)
		a.mu.Unlock()
		if region != "eu-west-1" || !strings.Contains(r.Host, ".eu-west-1.") {
			a.reply(w)
			return
		}
		if r.URL.Query().Get("list-type") == "2" {
			io.WriteString(w, `<ListBucketResult><Name>bkt</Name><KeyCount>0</KeyCount><IsTruncated>false</IsTruncated></ListBucketResult>`)
			return
		}
		w.Header().Set("Content-Length", "5")
		w.Header().Set("ETag", `"e"`)
		io.WriteString(w, "hello")
	}))
	t.Cleanup(a.srv.Close)
	return a
}

// transport reaches the server whatever host a request names (AWS's
// names resolve to it).
func (a *awsLike) transport(t *testing.T) *Transport {
	addr := a.srv.Listener.Addr().String()
	tr, err := NewTransport(TransportOptions{Insecure: true, Lanes: []DialLane{{Name: "default",
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Close)
	return tr
}

// With AWS's endpoints, a redirect that names the bucket's region moves
// the request there (the endpoint re-derived, never the Location), signs
// it again for that region and sends it once more; the signed GETs and
// the SDK's calls both.
func TestRegionRedirectAWS(t *testing.T) {
	isolateAWS(t)
	replies := map[string]func(w http.ResponseWriter){
		"301 x-amz-bucket-region": func(w http.ResponseWriter) {
			w.Header().Set("X-Amz-Bucket-Region", "eu-west-1")
			w.Header().Set("Location", "https://evil.example:8443/")
			w.WriteHeader(301)
			io.WriteString(w, `<Error><Code>PermanentRedirect</Code><Message>m</Message></Error>`)
		},
		"307 Endpoint of a new bucket": func(w http.ResponseWriter) {
			w.Header().Set("Location", "https://bkt.s3-eu-west-1.amazonaws.com:8443/k")
			w.WriteHeader(307)
			io.WriteString(w, `<Error><Code>TemporaryRedirect</Code><Message>m</Message><Endpoint>bkt.s3-eu-west-1.amazonaws.com</Endpoint></Error>`)
		},
		"308 x-amz-bucket-region": func(w http.ResponseWriter) {
			w.Header().Set("X-Amz-Bucket-Region", "eu-west-1")
			w.Header().Set("Location", "https://127.0.0.2:1/")
			w.WriteHeader(308)
		},
		"400 Region": func(w http.ResponseWriter) {
			w.WriteHeader(400)
			io.WriteString(w, `<Error><Code>AuthorizationHeaderMalformed</Code><Message>m</Message><Region>eu-west-1</Region></Error>`)
		},
	}
	for name, reply := range replies {
		t.Run(name, func(t *testing.T) {
			a := newAWSLike(t, reply)
			c, err := NewClient(context.Background(), "bkt", ClientOptions{Region: "us-east-1", Transport: a.transport(t)})
			if err != nil {
				t.Fatal(err)
			}
			body, err := NewSource(c, Target{Bucket: "bkt"}).Open(context.Background(), &transfer.Object{Key: "k", Size: -1}, 0, -1)
			if err != nil {
				t.Fatalf("signed GET: %v", err)
			}
			b, _ := io.ReadAll(body.ReadCloser)
			body.Close()
			if string(b) != "hello" {
				t.Errorf("signed GET read %q", b)
			}
			if _, err := c.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String("bkt")}); err != nil {
				t.Errorf("SDK ListObjectsV2: %v", err)
			}
			a.mu.Lock()
			defer a.mu.Unlock()
			want := []string{"bkt.s3.us-east-1.amazonaws.com us-east-1", "bkt.s3.eu-west-1.amazonaws.com eu-west-1",
				"bkt.s3.us-east-1.amazonaws.com us-east-1", "bkt.s3.eu-west-1.amazonaws.com eu-west-1"}
			if strings.Join(a.seen, "\n") != strings.Join(want, "\n") {
				t.Errorf("requests (host, signed region):\n%s\nwant\n%s", strings.Join(a.seen, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// A certificate that does not verify fails at once, as one
// CertificateError that says what to do, for the signed GETs and the
// SDK's calls: no retry.
func TestCertificateFailureNotRetried(t *testing.T) {
	isolateAWS(t)
	var hits atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateNew {
			hits.Add(1)
		}
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	c, err := NewClient(context.Background(), "bkt", ClientOptions{Region: "us-east-1", EndpointURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	_, err = NewSource(c, Target{Bucket: "bkt"}).Open(context.Background(), &transfer.Object{Key: "k", Size: -1}, 0, -1)
	var ce *CertificateError
	if !errors.As(err, &ce) || transfer.Retriable(err) {
		t.Errorf("signed GET: %v (retriable %v), want a CertificateError, not retriable", err, transfer.Retriable(err))
	}
	before := hits.Load()
	_, err = c.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k")})
	if !errors.As(err, &ce) || !strings.Contains(ce.Error(), "ca_bundle") {
		t.Errorf("SDK HEAD: %v, want a CertificateError naming ca_bundle", err)
	}
	if n := hits.Load() - before; n != 1 {
		t.Errorf("SDK HEAD opened %d connections, want 1: the certificate failure was retried", n)
	}
}
