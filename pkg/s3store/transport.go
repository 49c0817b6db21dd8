package s3store

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// TransportOptions are every knob of the HTTP transport that all the S3
// clients of a run share: how certificates are checked, the TLS floor and
// session resumption, the protocol, timeouts, the lanes (one per network
// card) and their dialers, and the redirect policy. A run builds one
// Transport from them, once, and every client of every command takes its
// HTTP client from it.
type TransportOptions struct {
	// CABundle is a PEM file of the authorities to trust instead of the
	// system's (the ca_bundle setting: --ca-bundle, AWS_CA_BUNDLE, the AWS
	// config's ca_bundle, the s3pd config file).
	CABundle string
	// Insecure skips the certificate check (no_verify_ssl).
	Insecure bool
	// Lanes are the paths to S3, one connection pool each: one per network
	// card named by --nics. None: one lane, "default", dialed by
	// DefaultDialer.
	Lanes []DialLane
	// Conns is the number of connections kept open per host and lane (the
	// requests in flight over the lane), so the pool does not churn.
	Conns int
	// DialTimeout bounds one connection attempt of the default lane
	// (10 s when zero); a lane's own dialer carries its own.
	DialTimeout time.Duration
	// ResponseHeaderTimeout bounds the wait for a response's headers
	// (2 min when zero): a safety net for the SDK's calls (listing, HEAD,
	// uploads); object GETs are watched for stalls by the engine, much
	// sooner.
	ResponseHeaderTimeout time.Duration
	// SessionCache holds TLS sessions for resumption (nil: a new cache of
	// SessionCacheSize entries shared by every lane).
	SessionCache tls.ClientSessionCache
	// Wrap, when set, decorates each lane's round tripper (handshake
	// counting, tracing), under the redirect policy.
	Wrap func(lane string, rt http.RoundTripper) http.RoundTripper
}

// DialLane is one path to S3: a name (the network card) and how it dials.
type DialLane struct {
	Name string
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// SessionCacheSize is how many TLS sessions a Transport keeps when no
// cache is given: more than the hosts one run talks to.
const SessionCacheSize = 256

// Transport is the HTTP side of a run: one client per lane, each with its
// own connection pool, built once from TransportOptions.
type Transport struct {
	opts   TransportOptions
	pem    []byte // the CA bundle's contents, for the SDK's own clients
	lanes  []lane
	next   atomic.Uint64
	closed atomic.Bool
}

type lane struct {
	name   string
	dial   func(ctx context.Context, network, addr string) (net.Conn, error)
	client *http.Client
	tr     *http.Transport
}

// NewTransport builds the transport opts describe. A CA bundle that cannot
// be read or holds no certificate is an error naming the file.
func NewTransport(opts TransportOptions) (*Transport, error) {
	t := &Transport{opts: opts}
	var roots *x509.CertPool
	if opts.CABundle != "" {
		pem, err := os.ReadFile(opts.CABundle)
		if err != nil {
			return nil, fmt.Errorf("ca_bundle: %w", err)
		}
		roots = x509.NewCertPool()
		if !roots.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("ca_bundle %s: no PEM certificate in it", opts.CABundle)
		}
		t.pem = pem
	}
	cache := opts.SessionCache
	if cache == nil {
		cache = tls.NewLRUClientSessionCache(SessionCacheSize)
	}
	lanes := opts.Lanes
	if len(lanes) == 0 {
		d := &net.Dialer{Timeout: cmpDuration(opts.DialTimeout, 10*time.Second), KeepAlive: 30 * time.Second}
		lanes = []DialLane{{Name: "default", Dial: d.DialContext}}
	}
	for _, l := range lanes {
		tr := newHTTPTransport(opts, l.Dial, &tls.Config{
			MinVersion:         tls.VersionTLS12,
			RootCAs:            roots,
			InsecureSkipVerify: opts.Insecure,
			ClientSessionCache: cache,
		})
		var rt http.RoundTripper = tr
		if opts.Wrap != nil {
			rt = opts.Wrap(l.Name, rt)
		}
		t.lanes = append(t.lanes, lane{name: l.Name, dial: l.Dial, tr: tr, client: &http.Client{Transport: rt, CheckRedirect: stayHome}})
	}
	return t, nil
}

// newHTTPTransport is one lane's pool: HTTP/1.1 only (S3 speaks it, and
// a test server that negotiated h2 would measure nothing like S3), no
// transparent decompression, the pool sized to the concurrency.
func newHTTPTransport(opts TransportOptions, dial func(ctx context.Context, network, addr string) (net.Conn, error), tc *tls.Config) *http.Transport {
	conns := max(opts.Conns, 16)
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dial,
		TLSClientConfig:       tc,
		TLSHandshakeTimeout:   10 * time.Second,
		ForceAttemptHTTP2:     false,
		TLSNextProto:          map[string]func(string, *tls.Conn) http.RoundTripper{},
		MaxIdleConns:          conns * 2,
		MaxIdleConnsPerHost:   conns * 2,
		IdleConnTimeout:       90 * time.Second,
		DisableCompression:    true,
		ResponseHeaderTimeout: cmpDuration(opts.ResponseHeaderTimeout, 2*time.Minute),
	}
}

func cmpDuration(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// stayHome is the redirect policy: a Location on the same scheme, host
// and port is followed (three hops at most); one anywhere else is not,
// and the 3xx answer goes back to the caller, which knows what a region
// redirect means. Go would follow it to any host, with the signed
// Authorization header when only the port differs.
func stayHome(req *http.Request, via []*http.Request) error {
	first := via[0].URL
	if req.URL.Scheme != first.Scheme || req.URL.Host != first.Host || len(via) > 3 {
		return http.ErrUseLastResponse
	}
	return nil
}

// Names returns the lanes' names, in order.
func (t *Transport) Names() []string {
	out := make([]string, len(t.lanes))
	for i, l := range t.lanes {
		out[i] = l.name
	}
	return out
}

// Lane returns the HTTP client of lane i, with Accept-Encoding: identity
// on every request, so bytes are saved as stored.
func (t *Transport) Lane(i int) aws.HTTPClient {
	return identity{reachability{certificates{t.lanes[i].client}}}
}

// RoundRobin returns an HTTP client that sends each request over the next
// lane in turn: an upload's or a server-side copy's parts spread over
// every network card, as ranged GETs do.
func (t *Transport) RoundRobin() aws.HTTPClient {
	if len(t.lanes) == 1 {
		return t.Lane(0)
	}
	return identity{reachability{certificates{roundRobin{t}}}}
}

type roundRobin struct{ t *Transport }

func (r roundRobin) Do(req *http.Request) (*http.Response, error) {
	n := r.t.next.Add(1) - 1
	return r.t.lanes[n%uint64(len(r.t.lanes))].client.Do(req)
}

// CABundle returns the CA bundle's PEM contents (nil: none), for the
// SDK's own clients (credentials).
func (t *Transport) CABundle() []byte { return t.pem }

// Keep keeps only the lanes keep accepts (by name); it must run before
// any client is taken. It returns the names dropped.
func (t *Transport) Keep(keep func(name string) bool) []string {
	var dropped []string
	kept := t.lanes[:0]
	for _, l := range t.lanes {
		if keep(l.name) {
			kept = append(kept, l)
		} else {
			l.tr.CloseIdleConnections()
			dropped = append(dropped, l.name)
		}
	}
	t.lanes = kept
	return dropped
}

// Probe connects once over every lane to addr ("host:port") within
// timeout and returns why each lane that could not connect failed (nil:
// all did). Only the TCP connection is tried: a lane that cannot reach
// the endpoint is found before a transfer waits on it.
func (t *Transport) Probe(ctx context.Context, addr string, timeout time.Duration) map[string]error {
	type result struct {
		name string
		err  error
	}
	ch := make(chan result, len(t.lanes))
	for _, l := range t.lanes {
		go func() {
			cctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			c, err := l.dial(cctx, "tcp", addr)
			if err == nil {
				c.Close()
			}
			ch <- result{l.name, err}
		}()
	}
	failed := map[string]error{}
	for range t.lanes {
		r := <-ch
		if r.err != nil {
			failed[r.name] = r.err
		}
	}
	if len(failed) == 0 {
		return nil
	}
	return failed
}

// CloseIdle closes every lane's idle connections: the next requests
// open new ones (resuming their TLS sessions).
func (t *Transport) CloseIdle() {
	for _, l := range t.lanes {
		l.tr.CloseIdleConnections()
	}
}

// Close closes every lane's idle connections, once.
func (t *Transport) Close() {
	if t.closed.Swap(true) {
		return
	}
	for _, l := range t.lanes {
		l.tr.CloseIdleConnections()
	}
}

// CertificateError is a server certificate that does not verify: it is
// never retried, and it reads as one line saying what to do.
type CertificateError struct {
	Host string
	Err  error
}

func (e *CertificateError) Error() string {
	var he x509.HostnameError
	if errors.As(e.Err, &he) && he.Certificate != nil {
		return fmt.Sprintf("tls: the certificate of %s is for %s, not %s: write the endpoint with a name the certificate holds (endpoint_url, --endpoint-url), or skip the check with no_verify_ssl (--no-verify-ssl)",
			e.Host, certNames(he.Certificate), he.Host)
	}
	return fmt.Sprintf("tls: the certificate of %s does not verify (%v): trust its authority with ca_bundle (--ca-bundle, AWS_CA_BUNDLE) or skip the check with no_verify_ssl (--no-verify-ssl)",
		e.Host, certCause(e.Err))
}

func (e *CertificateError) Unwrap() error { return e.Err }

// Retriable is false: a certificate that does not verify will not verify
// on a new connection either.
func (e *CertificateError) Retriable() bool { return false }

// certNames are the names and addresses a certificate is for.
func certNames(c *x509.Certificate) string {
	names := slices.Clone(c.DNSNames)
	for _, ip := range c.IPAddresses {
		names = append(names, ip.String())
	}
	if len(names) == 0 && c.Subject.CommonName != "" {
		names = append(names, c.Subject.CommonName)
	}
	if len(names) == 0 {
		return "no name"
	}
	return strings.Join(names, ", ")
}

// certCause is the innermost reason of a certificate failure, without the
// URL and the SDK's chain around it.
func certCause(err error) error {
	var cv *tls.CertificateVerificationError
	if errors.As(err, &cv) {
		return cv.Err
	}
	var ua x509.UnknownAuthorityError
	var he x509.HostnameError
	var ci x509.CertificateInvalidError
	switch {
	case errors.As(err, &ua):
		return ua
	case errors.As(err, &he):
		return he
	case errors.As(err, &ci):
		return ci
	}
	return err
}

// certificateFailed reports whether err is a certificate that does not
// verify.
func certificateFailed(err error) bool {
	var cv *tls.CertificateVerificationError
	var ua x509.UnknownAuthorityError
	var he x509.HostnameError
	var ci x509.CertificateInvalidError
	return errors.As(err, &cv) || errors.As(err, &ua) || errors.As(err, &he) || errors.As(err, &ci)
}

// asCertificateError turns a certificate failure in err into a
// *CertificateError for host; other errors pass unchanged.
func asCertificateError(host string, err error) error {
	var ce *CertificateError
	if err == nil || errors.As(err, &ce) || !certificateFailed(err) {
		return err
	}
	return &CertificateError{Host: host, Err: err}
}

// certificates is a decorator that turns a certificate failure into a
// *CertificateError naming the host.
type certificates struct{ c aws.HTTPClient }

func (c certificates) Do(r *http.Request) (*http.Response, error) {
	resp, err := c.c.Do(r)
	if err != nil {
		return nil, asCertificateError(r.URL.Host, err)
	}
	return resp, nil
}
