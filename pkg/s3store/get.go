package s3store

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// getter sends object GETs, and the HEAD for a ranged object's checksum,
// as plain signed HTTP requests over the client's tuned HTTP client,
// without the SDK's middleware stack: a GET is s3pd's hot request, and the
// stack costs more CPU than the signing (see docs/BENCHMARKS.md). Listing
// and uploads keep the SDK.
type getter struct {
	http   aws.HTTPClient
	creds  aws.CredentialsProvider // nil: anonymous
	signer Signer
	// at is where requests go: the region they are signed for and the URL
	// up to the key ("https://host/bucket/" path-style, or
	// "https://bucket.host/"). A redirect to the bucket's own region
	// replaces it, once, for every later request.
	at        atomic.Pointer[place]
	pathStyle bool // the bucket is in the path
	// placeFor returns the place of region.
	placeFor func(region string) *place
	// express, for a directory bucket, gives the session credentials of
	// bucket its requests are signed with (nil: creds sign them).
	express s3.ExpressCredentialsProvider
	bucket  string
}

// place is a region and the URL prefix that reaches the bucket there.
type place struct{ region, prefix string }

const unsignedPayload = "UNSIGNED-PAYLOAD"

// newGetter derives a getter from the SDK client's own options, so both
// reach the same endpoint with the same credentials and HTTP client.
func newGetter(client *s3.Client, bucket string) *getter {
	o := client.Options()
	g := &getter{http: o.HTTPClient, bucket: bucket}
	if sh, ok := o.HTTPClient.(sdkHTTP); ok {
		g.http = sh.direct
	}
	if o.Credentials != nil && !aws.IsCredentialsProvider(o.Credentials, aws.AnonymousCredentials{}) {
		g.creds = o.Credentials
		if IsDirectoryBucket(bucket) && o.ExpressCredentials != nil {
			// The SDK client's own provider: one cache of sessions for
			// s3pd's requests and the SDK's.
			g.express = o.ExpressCredentials
		}
	}
	if o.BaseEndpoint != nil && *o.BaseEndpoint != "" {
		var prefix string
		base, err := url.Parse(*o.BaseEndpoint)
		if err != nil || o.UsePathStyle {
			prefix = strings.TrimSuffix(*o.BaseEndpoint, "/") + "/" + bucket + "/"
			g.pathStyle = true
		} else {
			prefix = base.Scheme + "://" + bucket + "." + base.Host + strings.TrimSuffix(base.Path, "/") + "/"
		}
		// A custom endpoint's URL names no region: the bucket's region
		// is signed for on the same endpoint.
		g.placeFor = func(region string) *place { return &place{region, prefix} }
	} else {
		g.pathStyle = strings.Contains(bucket, ".") || o.UsePathStyle
		if IsDirectoryBucket(bucket) {
			// The zonal endpoint, always virtual-hosted, as the SDK's
			// endpoint rules build it.
			g.pathStyle = false
			g.placeFor = func(region string) *place { return &place{region, "https://" + zonalHost(bucket, region) + "/"} }
			g.at.Store(g.placeFor(o.Region))
			return g
		}
		g.placeFor = func(region string) *place {
			host := "s3." + region + ".amazonaws.com"
			if strings.HasPrefix(region, "cn-") {
				host += ".cn"
			}
			if g.pathStyle {
				return &place{region, "https://" + host + "/" + bucket + "/"}
			}
			return &place{region, "https://" + bucket + "." + host + "/"}
		}
	}
	g.at.Store(g.placeFor(o.Region))
	return g
}

// region is the region requests are signed for now.
func (g *getter) region() string { return g.at.Load().region }

// escapeKey escapes a key for a URL path as S3's UriEncode does: every
// byte but the unreserved A-Z a-z 0-9 - _ . ~ and the separator / becomes
// %XX (upper-case hex). A server that checks signatures computes them
// over this form; url.PathEscape keeps + & = : @ $ and others, which such
// a server re-encodes, and the signature no longer matches.
func escapeKey(key string) string {
	const hex = "0123456789ABCDEF"
	n := 0
	for i := 0; i < len(key); i++ {
		if !unreserved(key[i]) {
			n++
		}
	}
	if n == 0 {
		return key
	}
	b := make([]byte, 0, len(key)+2*n)
	for i := 0; i < len(key); i++ {
		c := key[i]
		if unreserved(c) {
			b = append(b, c)
		} else {
			b = append(b, '%', hex[c>>4], hex[c&15])
		}
	}
	return string(b)
}

// unreserved reports the bytes UriEncode keeps as they are in a key.
func unreserved(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' ||
		c == '-' || c == '_' || c == '.' || c == '~' || c == '/'
}

// get sends one GetObject and returns the response, or the S3 error as a
// *StatusError.
func (g *getter) get(ctx context.Context, obj *transfer.Object, off, n int64, req Request, checksums bool) (*http.Response, error) {
	return g.do(ctx, http.MethodGet, obj, off, n, req, checksums)
}

// head sends one HeadObject and returns the response (its body closed),
// or the S3 error as a *StatusError.
func (g *getter) head(ctx context.Context, obj *transfer.Object, req Request, checksums bool) (*http.Response, error) {
	resp, err := g.do(ctx, http.MethodHead, obj, 0, -1, req, checksums)
	if err == nil {
		resp.Body.Close()
	}
	return resp, err
}

// do sends one signed GET or HEAD of obj, for bytes [off, off+n) when
// n >= 0.
func (g *getter) do(ctx context.Context, method string, obj *transfer.Object, off, n int64, req Request, checksums bool) (*http.Response, error) {
	u := g.at.Load().prefix + escapeKey(obj.Key)
	if obj.VersionID != "" {
		u += "?versionId=" + url.QueryEscape(obj.VersionID)
	}
	return g.send(ctx, method, u, req, func(h http.Header) {
		if n >= 0 {
			h.Set("Range", "bytes="+strconv.FormatInt(off, 10)+"-"+strconv.FormatInt(off+n-1, 10))
		}
		if obj.ETag != "" {
			h.Set("If-Match", obj.ETag)
		}
		if checksums {
			h.Set("X-Amz-Checksum-Mode", "ENABLED")
		}
		if req.SSECKey != "" {
			alg, key, sum := req.ssec()
			h.Set("X-Amz-Server-Side-Encryption-Customer-Algorithm", *alg)
			h.Set("X-Amz-Server-Side-Encryption-Customer-Key", *key)
			h.Set("X-Amz-Server-Side-Encryption-Customer-Key-Md5", *sum)
		}
	})
}

// send signs and sends one request to u with the headers every request
// carries (request payer, expected owner) and those set adds, and returns
// a 200 or 206 response, or the S3 error as a *StatusError. An
// answer that the bucket lives in another region (x-amz-bucket-region on
// a 301 or 400) moves the getter there and sends the request again, once,
// as the AWS CLI does.
func (g *getter) send(ctx context.Context, method, u string, req Request, set func(http.Header)) (*http.Response, error) {
	p := g.at.Load()
	resp, err := g.sendTo(ctx, method, u, p.region, req, set)
	var moved *wrongRegion
	if !errors.As(err, &moved) {
		return resp, err
	}
	np := g.placeFor(moved.region)
	g.at.CompareAndSwap(p, np)
	u = strings.TrimSuffix(np.prefix, "/") + strings.TrimPrefix(u, strings.TrimSuffix(p.prefix, "/"))
	return g.sendTo(ctx, method, u, np.region, req, set)
}

// sendTo is one signed request for region.
func (g *getter) sendTo(ctx context.Context, method, u, region string, req Request, set func(http.Header)) (*http.Response, error) {
	r, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return nil, err
	}
	h := r.Header
	set(h)
	if req.RequestPayer != "" {
		h.Set("X-Amz-Request-Payer", req.RequestPayer)
	}
	if req.ExpectedBucketOwner != "" {
		h.Set("X-Amz-Expected-Bucket-Owner", req.ExpectedBucketOwner)
	}
	switch {
	case g.express != nil:
		creds, err := g.express.Retrieve(ctx, g.bucket)
		if err != nil {
			// CreateSession was retried by the SDK already.
			return nil, transfer.Permanent(err)
		}
		h.Set("X-Amz-Content-Sha256", unsignedPayload)
		g.signer.SignExpress(r, creds, unsignedPayload, region, time.Now())
	case g.creds != nil:
		creds, err := g.creds.Retrieve(ctx)
		if err != nil {
			return nil, credentialsError{err}
		}
		h.Set("X-Amz-Content-Sha256", unsignedPayload)
		g.signer.Sign(r, creds, unsignedPayload, "s3", region, time.Now())
	}
	resp, err := g.http.Do(r)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusPartialContent {
		return resp, nil
	}
	defer resp.Body.Close()
	body, err := responseError(resp)
	// The bucket's region, as botocore looks for it: x-amz-bucket-region,
	// else the Region or Endpoint of the error body (a 301, 307 or 400
	// AuthorizationHeaderMalformed).
	home := homeRegion(resp.Header, body)
	if home != "" && home != region && (isRedirect(resp.StatusCode) || resp.StatusCode == http.StatusBadRequest) {
		return nil, &wrongRegion{region: home, err: err}
	}
	if isRedirect(resp.StatusCode) {
		return nil, &RedirectError{Status: resp.StatusCode, Location: resp.Header.Get("Location"), Region: home, Err: err}
	}
	return nil, err
}

// wrongRegion is an answer that the bucket lives in region.
type wrongRegion struct {
	region string
	err    error
}

func (w *wrongRegion) Error() string {
	return fmt.Sprintf("bucket is in region %s: %v", w.region, w.err)
}
func (w *wrongRegion) Unwrap() error { return w.err }

// responseError reads an S3 error answer, with what it says of the
// bucket's region (the Region or Endpoint of a wrong-region error).
func responseError(resp *http.Response) (redirectBody, error) {
	se := &StatusError{Status: resp.StatusCode}
	var body redirectBody
	if xml.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&body) == nil {
		se.Code, se.Message = body.Code, body.Message
	}
	if se.Code == "" {
		se.Code = codeOfStatus(se.Status)
	}
	return body, se
}

// headerChecksums gathers the full-object checksums of a response.
func headerChecksums(h http.Header) map[string]string {
	v := func(name string) *string {
		if s := header(h, name); s != "" {
			return &s
		}
		return nil
	}
	return checksums(v("X-Amz-Checksum-Crc64nvme"), v("X-Amz-Checksum-Crc32c"), v("X-Amz-Checksum-Crc32"))
}
