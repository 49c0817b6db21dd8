package s3store

import (
	"bytes"
	"cmp"
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// The redirect rules. The transport never follows a Location to another
// host or port (stayHome); what the 3xx answer means is decided here. An
// answer that names the bucket's region (x-amz-bucket-region, or the
// Region or Endpoint of its body: a 301 PermanentRedirect, the 307
// TemporaryRedirect S3 sends for a new bucket, a 400
// AuthorizationHeaderMalformed) is taken once:
//   - with AWS's own endpoints, the endpoint is re-derived for that
//     region (never the Location), the request signed again for it and
//     sent once more; later requests go there at once;
//   - with a custom endpoint, the request stays on it, signed for that
//     region, as the AWS CLI does.
// Any other redirect, or a second one, fails with one line that names
// where the endpoint pointed (*RedirectError).

// RedirectError is a redirect s3pd does not follow: from a custom
// endpoint, or one that names no region.
type RedirectError struct {
	Status   int
	Location string // where the server pointed ("" when it said nowhere)
	Region   string // the bucket's region, when the answer names it
	Err      error  // the answer as a *StatusError
}

func (e *RedirectError) Error() string {
	msg := fmt.Sprintf("the endpoint answered %d", e.Status)
	if e.Location != "" {
		msg += " to " + e.Location
	}
	msg += ": s3pd does not follow redirects away from the endpoint"
	if e.Region != "" {
		msg += fmt.Sprintf(" (the bucket is in region %s: set region, or the endpoint that serves it)", e.Region)
	}
	return msg
}

func (e *RedirectError) Unwrap() error { return e.Err }

// Retriable is false: the same request gets the same redirect.
func (e *RedirectError) Retriable() bool { return false }

// isRedirect reports whether status is a redirect S3 may send.
func isRedirect(status int) bool {
	switch status {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// redirectBody is what S3's error body says of where the bucket is.
type redirectBody struct {
	Code     string `xml:"Code"`
	Message  string `xml:"Message"`
	Region   string `xml:"Region"`
	Endpoint string `xml:"Endpoint"`
}

// homeRegion is the bucket's region as botocore looks for it:
// x-amz-bucket-region, else the body's Region, else the region in the
// body's Endpoint (bucket.s3.REGION.amazonaws.com or bucket.s3-REGION...).
func homeRegion(h http.Header, body redirectBody) string {
	return cmp.Or(h.Get("X-Amz-Bucket-Region"), body.Region, endpointRegion(body.Endpoint))
}

// endpointRegion is the region an AWS S3 host name names ("" for none, or
// for us-east-1's global s3.amazonaws.com).
func endpointRegion(host string) string {
	_, labels, ok := s3Labels(host)
	if !ok {
		return ""
	}
	for i, l := range labels {
		switch {
		case l == "s3" && i+1 < len(labels):
			return labels[i+1]
		case strings.HasPrefix(l, "s3-") && l != "s3-accelerate":
			return strings.TrimPrefix(l, "s3-")
		}
	}
	return ""
}

// s3Labels splits an AWS host name into its suffix (amazonaws.com or
// amazonaws.com.cn) and the labels before it.
func s3Labels(host string) (suffix string, labels []string, ok bool) {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if h, _, found := strings.Cut(host, ":"); found {
		host = h
	}
	for _, s := range []string{".amazonaws.com.cn", ".amazonaws.com"} {
		if rest, found := strings.CutSuffix(host, s); found {
			return s, strings.Split(rest, "."), true
		}
	}
	return "", nil, false
}

// regionHost is host moved to region: the same bucket label (virtual
// hosted), s3.REGION under the same suffix. ok is false for a host that
// is not AWS's S3.
func regionHost(host, region string) (string, bool) {
	suffix, labels, ok := s3Labels(host)
	if !ok {
		return "", false
	}
	for i, l := range labels {
		if l == "s3" || strings.HasPrefix(l, "s3-") && l != "s3-accelerate" {
			out := append(append([]string{}, labels[:i]...), "s3", region)
			if strings.HasPrefix(region, "cn-") {
				suffix = ".amazonaws.com.cn"
			}
			return strings.Join(out, ".") + suffix, true
		}
	}
	return "", false
}

// signedRegion is the region an S3 request was signed for ("" unsigned).
func signedRegion(r *http.Request) string {
	auth := r.Header.Get("Authorization")
	_, cred, ok := strings.Cut(auth, "Credential=")
	if !ok {
		return ""
	}
	cred, _, _ = strings.Cut(cred, ",")
	parts := strings.Split(cred, "/")
	if len(parts) < 5 {
		return ""
	}
	return parts[2]
}

// regionRedirect is the SDK's HTTP client on AWS's own endpoints: a
// request answered with the bucket's region is moved there, signed again
// and sent once more; every later request goes there first.
type regionRedirect struct {
	c      aws.HTTPClient
	creds  aws.CredentialsProvider // nil: anonymous
	signer *v4.Signer
	custom bool                   // a custom endpoint: the host stays
	moved  atomic.Pointer[string] // the region requests go to, once known
}

func newRegionRedirect(c aws.HTTPClient, creds aws.CredentialsProvider, custom bool) *regionRedirect {
	if creds != nil && aws.IsCredentialsProvider(creds, aws.AnonymousCredentials{}) {
		creds = nil
	}
	return &regionRedirect{c: c, creds: creds, custom: custom,
		signer: v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })}
}

func (rr *regionRedirect) Do(r *http.Request) (*http.Response, error) {
	if m := rr.moved.Load(); m != nil && signedRegion(r) != *m {
		if err := rr.move(r, *m); err != nil {
			return nil, err
		}
	}
	resp, err := rr.c.Do(r)
	if err != nil || !isRedirect(resp.StatusCode) && resp.StatusCode != http.StatusBadRequest {
		return resp, err
	}
	body, region := peekRegion(resp)
	if region == "" || region == signedRegion(r) {
		return resp, nil
	}
	if _, ok := regionHost(r.URL.Host, region); !ok && !rr.custom {
		return resp, nil
	}
	if rr.custom && rr.creds == nil {
		return resp, nil // an unsigned request names no region to change
	}
	rr.moved.Store(&region)
	if r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0 {
		// The body is gone: the SDK's own retry does not apply to a
		// redirect, so say where the bucket is; later requests go there.
		return resp, nil
	}
	resp.Body.Close()
	_ = body
	again := r.Clone(r.Context())
	if err := rr.move(again, region); err != nil {
		return nil, err
	}
	return rr.c.Do(again)
}

// move points r at region and signs it again for it.
func (rr *regionRedirect) move(r *http.Request, region string) error {
	if !rr.custom {
		host, ok := regionHost(r.URL.Host, region)
		if !ok {
			return nil
		}
		r.URL.Host, r.Host = host, ""
	}
	if rr.creds == nil {
		return nil
	}
	return resign(r.Context(), rr.signer, rr.creds, r, region)
}

// resign signs r again, for region, with its payload hash.
func resign(ctx context.Context, signer *v4.Signer, provider aws.CredentialsProvider, r *http.Request, region string) error {
	creds, err := provider.Retrieve(ctx)
	if err != nil {
		return credentialsError{err}
	}
	for _, h := range []string{"Authorization", "X-Amz-Date", "X-Amz-Security-Token"} {
		r.Header.Del(h)
	}
	hash := cmp.Or(r.Header.Get("X-Amz-Content-Sha256"), unsignedPayload)
	return signer.SignHTTP(ctx, creds, r, hash, "s3", region, time.Now())
}

// peekRegion reads the bucket's region from a redirect or 400 answer and
// puts its body back for whoever reads it next.
func peekRegion(resp *http.Response) (redirectBody, string) {
	var body redirectBody
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(b))
	_ = xml.Unmarshal(b, &body)
	return body, homeRegion(resp.Header, body)
}
