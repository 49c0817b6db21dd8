// Package bare holds reference S3 download clients that do nothing but the
// requests: a fixed pool of goroutines sends signed GETs (ranged for large
// objects) over s3pd's own tuned HTTP transport and either drops the
// bodies or writes each at its offset into pre-sized files. Benchmarks
// measure s3pd against them as the ceiling of this machine; s3pd never
// imports this package.
//
// The requests are built with net/http and signed with s3pd's own SigV4
// signer (s3store.Signer, the cheapest there is here), without the SDK's
// middleware stack, as s3pd's are. They carry what s3pd's carry: path-style
// URL, Range (for objects at or above the threshold), If-Match with the
// listed ETag, and Accept-Encoding: identity (added by the transport).
package bare

import (
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/s3pd/s3pd/pkg/checksum"
	"github.com/s3pd/s3pd/pkg/s3store"
)

// emptyHash is the SHA-256 of an empty payload, the x-amz-content-sha256
// of every GET.
const emptyHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// Options describe the server and the concurrency.
type Options struct {
	// Endpoint is the base URL of an S3-compatible server, addressed
	// path-style (http://127.0.0.1:9000).
	Endpoint string
	// Bucket holds the objects.
	Bucket string
	// Region is the signing region (default us-east-1).
	Region string
	// Credentials sign every request; the zero value sends them unsigned.
	Credentials aws.Credentials
	// Concurrency is the number of requests in flight (default 16).
	Concurrency int
	// PartSize is the size of one range (default 8 MiB).
	PartSize int64
	// Threshold: objects smaller than it are fetched with one GET without
	// Range, as s3pd does (default PartSize).
	Threshold int64
	// BufferSize is each goroutine's copy buffer (default 128 KiB, s3pd's).
	BufferSize int
	// Sum, if set, makes the client sum every byte of every part with
	// CRC64NVME as it lands, the least work a client that verifies must
	// do, and gets each part's sum (from any goroutine). The client
	// compares nothing.
	Sum func(obj int, off int64, sum checksum.Running)
}

func (o Options) withDefaults() Options {
	if o.Region == "" {
		o.Region = "us-east-1"
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 16
	}
	if o.PartSize <= 0 {
		o.PartSize = 8 << 20
	}
	if o.Threshold <= 0 {
		o.Threshold = o.PartSize
	}
	if o.BufferSize <= 0 {
		o.BufferSize = 128 << 10
	}
	return o
}

// Object is one listed object.
type Object struct {
	Key  string
	Size int64
	ETag string
}

// Client sends the requests.
type Client struct {
	opts   Options
	http   aws.HTTPClient
	signer s3store.Signer
	base   string // endpoint + "/" + bucket + "/"
}

// New returns a client whose connection pool is s3pd's, sized to the
// concurrency.
func New(opts Options) *Client {
	opts = opts.withDefaults()
	return &Client{
		opts: opts,
		http: s3store.HTTPClient(opts.Concurrency),
		base: strings.TrimSuffix(opts.Endpoint, "/") + "/" + opts.Bucket + "/",
	}
}

// newRequest builds a signed GET of rawURL, which must be escaped.
func (c *Client) newRequest(ctx context.Context, rawURL string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, fmt.Errorf("request %s: %w", rawURL, err)
	}
	if c.opts.Credentials.AccessKeyID == "" {
		return req, nil
	}
	req.Header.Set("X-Amz-Content-Sha256", emptyHash)
	c.signer.Sign(req, c.opts.Credentials, emptyHash, "s3", c.opts.Region, time.Now())
	return req, nil
}

// objectURL is the escaped path-style URL of key.
func (c *Client) objectURL(key string) string {
	return c.base + (&url.URL{Path: key}).EscapedPath()
}

// listPage is the part of a ListObjectsV2 answer the client needs.
type listPage struct {
	Contents []struct {
		Key  string
		Size int64
		ETag string
	}
	IsTruncated           bool
	NextContinuationToken string
}

// List returns every object under prefix, with ListObjectsV2.
func (c *Client) List(ctx context.Context, prefix string) ([]Object, error) {
	var out []Object
	token := ""
	for {
		q := url.Values{"list-type": {"2"}, "prefix": {prefix}}
		if token != "" {
			q.Set("continuation-token", token)
		}
		req, err := c.newRequest(ctx, c.base+"?"+q.Encode())
		if err != nil {
			return nil, err
		}
		resp, err := c.http.Do(req)
		if err != nil {
			return nil, fmt.Errorf("list %s%s: %w", c.base, prefix, err)
		}
		var page listPage
		if resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("status %s", resp.Status)
		} else {
			err = xml.NewDecoder(resp.Body).Decode(&page)
		}
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("list %s%s: %w", c.base, prefix, err)
		}
		for _, o := range page.Contents {
			out = append(out, Object{Key: o.Key, Size: o.Size, ETag: o.ETag})
		}
		if !page.IsTruncated || page.NextContinuationToken == "" {
			return out, nil
		}
		token = page.NextContinuationToken
	}
}

// get opens bytes [off, off+n) of obj (n < 0: the whole object, no
// Range) and checks that the response carries exactly them.
func (c *Client) get(ctx context.Context, rawURL string, obj *Object, off, n int64) (io.ReadCloser, error) {
	req, err := c.newRequest(ctx, rawURL)
	if err != nil {
		return nil, err
	}
	want, status := obj.Size, http.StatusOK
	if n >= 0 {
		req.Header.Set("Range", "bytes="+strconv.FormatInt(off, 10)+"-"+strconv.FormatInt(off+n-1, 10))
		want, status = n, http.StatusPartialContent
	}
	if obj.ETag != "" {
		req.Header.Set("If-Match", obj.ETag)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("get %s bytes=%d-%d: %w", obj.Key, off, off+n-1, err)
	}
	if resp.StatusCode != status || resp.ContentLength != want {
		resp.Body.Close()
		return nil, fmt.Errorf("get %s bytes=%d-%d: status %s, length %d, want %d", obj.Key, off, off+n-1, resp.Status, resp.ContentLength, want)
	}
	return resp.Body, nil
}
