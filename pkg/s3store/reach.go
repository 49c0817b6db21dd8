package s3store

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// What keeps a request from reaching S3 at an endpoint (EndpointError.Kind).
const (
	// ReachRefused: nothing listens at the address.
	ReachRefused = "refused"
	// ReachNoHost: the host name does not resolve.
	ReachNoHost = "no-host"
	// ReachDNS: the name server did not answer.
	ReachDNS = "dns"
	// ReachTimeout: the address did not answer a connect in time.
	ReachTimeout = "timeout"
	// ReachWantsHTTP: an https:// URL at a port that speaks plain HTTP.
	ReachWantsHTTP = "wants-http"
	// ReachWantsHTTPS: an http:// URL at a port that speaks HTTPS.
	ReachWantsHTTPS = "wants-https"
)

// EndpointError is an endpoint that cannot be reached, or that speaks
// another scheme than its URL says: it reads as one line in plain words
// with the fix, without the SDK's chain around it.
type EndpointError struct {
	Kind string
	// Host is the host:port the request went to; Scheme its URL's.
	Host, Scheme string
	Err          error
}

func (e *EndpointError) Error() string {
	host, _, _ := net.SplitHostPort(e.Host)
	switch e.Kind {
	case ReachRefused:
		return fmt.Sprintf("cannot reach %s: connection refused, nothing listens there: is the server running, and is the endpoint (endpoint_url, --endpoint-url) %s://%s right?", e.Host, e.Scheme, e.Host)
	case ReachNoHost:
		return fmt.Sprintf("cannot reach %s: no such host %q: check the endpoint (endpoint_url, --endpoint-url), the region or the bucket's name, and the machine's DNS", e.Host, host)
	case ReachDNS:
		return fmt.Sprintf("cannot reach %s: the name server did not resolve %q (%v): check the machine's DNS and network", e.Host, host, e.Err)
	case ReachTimeout:
		return fmt.Sprintf("cannot reach %s: no answer to a connection within the connect timeout: check the endpoint, the network and any firewall", e.Host)
	case ReachWantsHTTP:
		return fmt.Sprintf("%s speaks plain HTTP, not HTTPS: write the endpoint as http://%s (endpoint_url, --endpoint-url)", e.Host, e.Host)
	case ReachWantsHTTPS:
		return fmt.Sprintf("%s speaks HTTPS, not plain HTTP: write the endpoint as https://%s (endpoint_url, --endpoint-url)", e.Host, e.Host)
	}
	return fmt.Sprintf("cannot reach %s: %v", e.Host, e.Err)
}

func (e *EndpointError) Unwrap() error { return e.Err }

// Retriable: a wrong scheme stays wrong on a new connection; whether a
// failure to connect is worth another attempt is the engine's rule for
// the error beneath.
func (e *EndpointError) Retriable() bool {
	if e.Kind == ReachWantsHTTP || e.Kind == ReachWantsHTTPS {
		return false
	}
	return transfer.Retriable(e.Err)
}

// wrongScheme reports whether err is an endpoint with the wrong scheme.
func wrongScheme(err error) bool {
	var ee *EndpointError
	return errors.As(err, &ee) && (ee.Kind == ReachWantsHTTP || ee.Kind == ReachWantsHTTPS)
}

// reachKind says what kept a request from reaching the server ("" when
// err is something else).
func reachKind(err error) string {
	var dns *net.DNSError
	var rh tls.RecordHeaderError
	var op *net.OpError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return ReachRefused
	case errors.As(err, &dns) && dns.IsNotFound:
		return ReachNoHost
	case errors.As(err, &dns):
		return ReachDNS
	case errors.As(err, &rh) && bytes.HasPrefix(rh.RecordHeader[:], []byte("HTTP")),
		strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return ReachWantsHTTP
	case errors.As(err, &op) && op.Op == "dial" && op.Timeout():
		return ReachTimeout
	}
	return ""
}

// httpsAnswers are what HTTPS servers answer a plain HTTP request with
// (Go's crypto/tls servers, nginx), in a 400's body.
var httpsAnswers = []string{"Client sent an HTTP request to an HTTPS server", "plain HTTP request was sent to HTTPS port"}

// reachability is a decorator that turns a request that did not reach
// S3 (refused, no such host, a wrong scheme) into an *EndpointError. It
// looks at nothing of a response but a 400's first bytes.
type reachability struct{ c aws.HTTPClient }

func (c reachability) Do(r *http.Request) (*http.Response, error) {
	resp, err := c.c.Do(r)
	if err != nil {
		if kind := reachKind(err); kind != "" {
			return nil, &EndpointError{Kind: kind, Host: hostPort(r), Scheme: r.URL.Scheme, Err: err}
		}
		return nil, err
	}
	if resp.StatusCode != http.StatusBadRequest || r.URL.Scheme != "http" {
		return resp, nil
	}
	head := make([]byte, 256)
	n, _ := io.ReadFull(resp.Body, head)
	for _, a := range httpsAnswers {
		if bytes.Contains(head[:n], []byte(a)) {
			resp.Body.Close()
			return nil, &EndpointError{Kind: ReachWantsHTTPS, Host: hostPort(r), Scheme: "http", Err: errors.New(strings.TrimSpace(string(head[:n])))}
		}
	}
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head[:n]), resp.Body), resp.Body}
	return resp, nil
}

// hostPort is the request's host with its port (the scheme's when the
// URL gives none).
func hostPort(r *http.Request) string {
	if r.URL.Port() != "" {
		return r.URL.Host
	}
	port := "443"
	if r.URL.Scheme == "http" {
		port = "80"
	}
	return net.JoinHostPort(r.URL.Hostname(), port)
}
