// Package s3store is s3pd's S3 adapter: it builds tuned S3 clients (one
// per network card when asked) and implements the engine's Source over
// ListObjectsV2 and ranged GetObject.
package s3store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/logging"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// ClientOptions describe how to reach S3.
type ClientOptions struct {
	Region      string // empty: detect the bucket's region
	EndpointURL string // S3-compatible store
	// AddressingStyle is "path", "virtual" or "auto" (or ""): path-style
	// for a custom endpoint, virtual-hosted for AWS.
	AddressingStyle string
	Profile         string // AWS profile for credentials
	NoSignRequest   bool   // anonymous requests (public buckets)
	// OnRetry, when set, is called before the SDK retries a listing, HEAD
	// or upload request, with the attempt that failed (1-based) and why.
	OnRetry func(attempt int, err error)
	// Transport carries every request: the run's one transport (nil: a
	// default one of its own, for tests and tools).
	Transport *Transport
	// Lane is the lane of Transport the client sends over; AllLanes: each
	// request over the next lane in turn (uploads, server-side copies).
	Lane int
	// Sessions caches the session credentials of directory buckets (nil:
	// the client makes a cache of its own).
	Sessions *Sessions
}

// AllLanes makes a client send each request over the next lane in turn.
const AllLanes = -1

// HTTPClient builds an HTTP client tuned for many parallel range GETs,
// with conns connections kept per host, over a default transport: for
// tools that need no settings (the reference clients).
func HTTPClient(conns int) aws.HTTPClient {
	t, _ := NewTransport(TransportOptions{Conns: conns}) // no CA bundle: no error
	return t.Lane(0)
}

// identity asks for bytes as stored.
type identity struct{ c aws.HTTPClient }

func (i identity) Do(r *http.Request) (*http.Response, error) {
	r.Header.Set("Accept-Encoding", "identity")
	return i.c.Do(r)
}

// httpClient is the client's HTTP client from opts.
func (opts ClientOptions) httpClient() (*Transport, aws.HTTPClient, error) {
	t := opts.Transport
	if t == nil {
		var err error
		if t, err = NewTransport(TransportOptions{}); err != nil {
			return nil, nil, err
		}
	}
	if opts.Lane == AllLanes {
		return t, t.RoundRobin(), nil
	}
	if opts.Lane < 0 || opts.Lane >= len(t.lanes) {
		return nil, nil, fmt.Errorf("lane %d of %d", opts.Lane, len(t.lanes))
	}
	return t, t.Lane(opts.Lane), nil
}

// sdkHTTP is the HTTP client the SDK's calls go through: the lane's,
// under the region redirect rule on AWS's endpoints. direct is the lane's
// own, for the signed GETs, which follow a region redirect themselves.
type sdkHTTP struct {
	aws.HTTPClient
	direct aws.HTTPClient
}

// NewClient returns an S3 client for bucket. Without a region, it asks
// the bucket where it lives (x-amz-bucket-region) instead of failing on
// a redirect later. The SDK's own retries are off for object reads: the
// engine retries and resumes ranges itself.
func NewClient(ctx context.Context, bucket string, opts ClientOptions) (*s3.Client, error) {
	var load []func(*config.LoadOptions) error
	if opts.Profile != "" {
		load = append(load, config.WithSharedConfigProfile(opts.Profile))
	}
	if opts.Region != "" {
		load = append(load, config.WithRegion(opts.Region))
	}
	t, hc, err := opts.httpClient()
	if err != nil {
		return nil, err
	}
	// The SDK would print its own warnings to stderr; s3pd reports
	// errors itself, one line each.
	load = append(load, config.WithLogger(logging.Nop{}))
	if opts.NoSignRequest {
		load = append(load, config.WithCredentialsProvider(aws.AnonymousCredentials{}))
	}
	if pem := t.CABundle(); pem != nil {
		// For the SDK's own clients (credentials), and so that it does
		// not read AWS_CA_BUNDLE over the run's ca_bundle.
		load = append(load, config.WithCustomCABundle(bytes.NewReader(pem)))
	}
	cfg, err := config.LoadDefaultConfig(ctx, load...)
	if err != nil {
		return nil, fmt.Errorf("aws config: %w", err)
	}
	directory := IsDirectoryBucket(bucket)
	if directory {
		if err := checkDirectory(bucket, cfg.Region, opts); err != nil {
			return nil, err
		}
		if opts.Sessions == nil {
			opts.Sessions = NewSessions()
		}
	}
	// Every request of the client goes over the run's transport; the
	// SDK's own default client served only the loading above.
	cfg.HTTPClient = sdkHTTP{HTTPClient: newRegionRedirect(hc, cfg.Credentials, opts.EndpointURL != ""), direct: hc}
	configure := func(o *s3.Options) {
		if opts.EndpointURL != "" {
			o.BaseEndpoint = aws.String(opts.EndpointURL)
		}
		switch opts.AddressingStyle {
		case "path":
			o.UsePathStyle = true
		case "virtual":
			o.UsePathStyle = false
		default:
			// As the AWS CLI: a custom endpoint (which may not resolve
			// bucket.host names) is addressed path-style.
			o.UsePathStyle = o.BaseEndpoint != nil && *o.BaseEndpoint != ""
		}
		o.Retryer = sdkRetryer(transfer.BudgetFor(transfer.StoreCall), opts.OnRetry)
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.DisableLogOutputChecksumValidationSkipped = true
		if directory {
			o.ExpressCredentials = opts.Sessions
		}
	}
	if cfg.Region == "" {
		if opts.EndpointURL != "" {
			cfg.Region = "us-east-1"
		} else {
			probe := s3.NewFromConfig(cfg, func(o *s3.Options) { o.Region = "us-east-1"; configure(o) })
			region, err := manager.GetBucketRegion(ctx, probe, bucket)
			if err != nil {
				var nf manager.BucketNotFound
				if errors.As(err, &nf) {
					return nil, fmt.Errorf("bucket %s: NoSuchBucket", bucket)
				}
				var ce *CertificateError
				if errors.As(err, &ce) {
					return nil, ce
				}
				return nil, fmt.Errorf("detect region of bucket %s: %w", bucket, err)
			}
			cfg.Region = region
		}
	}
	client := s3.NewFromConfig(cfg, configure)
	if directory {
		opts.Sessions.Bind(client)
	}
	return client, nil
}

// sdkRetryer retries the requests the SDK sends on its own as budget
// says (attempts and pacing), with no shared retry token bucket, which
// empties at high fan-out and then fails work that would have
// succeeded. A connection that cannot be made (refused, no such host,
// timed out) fails at once with a clear error rather than after silent
// attempts. onRetry, when set, hears of each retry.
func sdkRetryer(budget transfer.Backoff, onRetry func(attempt int, err error)) aws.RetryerV2 {
	return reportingRetryer{retry.NewStandard(func(so *retry.StandardOptions) {
		so.MaxAttempts = budget.MaxAttempts
		so.MaxBackoff = budget.Cap
		so.Backoff = sdkBackoff{budget}
		so.RateLimiter = ratelimit.None
		so.Retryables = append([]retry.IsErrorRetryable{retry.IsErrorRetryableFunc(noRetryOnDial),
			retry.IsErrorRetryableFunc(noRetryOnCertificate), retry.IsErrorRetryableFunc(noRetryOnWrongScheme)}, so.Retryables...)
	}), onRetry}
}

// sdkBackoff paces the SDK's retries as the engine paces its own.
type sdkBackoff struct{ transfer.Backoff }

func (b sdkBackoff) BackoffDelay(attempt int, _ error) (time.Duration, error) {
	return b.Delay(attempt), nil
}

// reportingRetryer calls onRetry before each retry.
type reportingRetryer struct {
	aws.RetryerV2
	onRetry func(attempt int, err error)
}

func (r reportingRetryer) RetryDelay(attempt int, err error) (time.Duration, error) {
	if r.onRetry != nil {
		r.onRetry(attempt, err)
	}
	return r.RetryerV2.RetryDelay(attempt, err)
}

// noRetryOnDial says that an error connecting is not retried.
func noRetryOnDial(err error) aws.Ternary {
	if dialFailed(err) {
		return aws.FalseTernary
	}
	return aws.UnknownTernary
}

// noRetryOnCertificate says that a certificate that does not verify is
// not retried: it will not verify on a new connection either.
func noRetryOnCertificate(err error) aws.Ternary {
	if certificateFailed(err) {
		return aws.FalseTernary
	}
	return aws.UnknownTernary
}

// noRetryOnWrongScheme says that an endpoint of the wrong scheme is not
// retried: it answers the same on a new connection.
func noRetryOnWrongScheme(err error) aws.Ternary {
	if wrongScheme(err) {
		return aws.FalseTernary
	}
	return aws.UnknownTernary
}

// dialFailed reports whether err is a failure to connect: refused, no
// such host, or a connect timeout.
func dialFailed(err error) bool {
	var op *net.OpError
	var dns *net.DNSError
	return errors.As(err, &dns) || errors.As(err, &op) && op.Op == "dial"
}

// NewLaneClients returns one client for bucket per lane of opts'
// transport, in order, each with its lane's connection pool; the
// bucket's region is detected once, by the first.
func NewLaneClients(ctx context.Context, bucket string, opts ClientOptions) ([]*s3.Client, error) {
	if opts.Transport == nil {
		t, err := NewTransport(TransportOptions{})
		if err != nil {
			return nil, err
		}
		opts.Transport = t
	}
	if IsDirectoryBucket(bucket) && opts.Sessions == nil {
		opts.Sessions = NewSessions() // one cache for every lane
	}
	var out []*s3.Client
	for i := range opts.Transport.lanes {
		opts.Lane = i
		c, err := NewClient(ctx, bucket, opts)
		if err != nil {
			return nil, err
		}
		opts.Region = c.Options().Region // detected once
		out = append(out, c)
	}
	return out, nil
}
