// Package s3store is s3pd's S3 adapter: it builds tuned S3 clients (one
// per network card when asked) and implements the engine's Source over
// ListObjectsV2 and ranged GetObject.
package s3store

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/logging"
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
	// Conns is the number of connections to keep per host (the
	// concurrency), so the pool does not churn.
	Conns int
	// OnRetry, when set, is called before the SDK retries a listing, HEAD
	// or upload request, with the attempt that failed (1-based) and why.
	OnRetry func(attempt int, err error)
	// DialContext, when set, dials every connection (per-NIC binding,
	// spreading over the endpoint's addresses).
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
	// TLS is how the server's certificate is checked.
	TLS TLS
	// Handshakes, when set, counts the TLS handshakes of every request
	// the client sends.
	Handshakes *Handshakes
}

// TLS says how a server's certificate is checked: against the system's
// authorities by default.
type TLS struct {
	// CABundle is a PEM file of the authorities to trust instead
	// (the AWS CLI's --ca-bundle; AWS_CA_BUNDLE is read by the SDK).
	CABundle string
	// Insecure skips the check (the AWS CLI's --no-verify-ssl).
	Insecure bool
}

// HTTPClient builds an HTTP client tuned for many parallel range GETs:
// one pool sized to the concurrency, no transparent decompression, and
// Accept-Encoding: identity on every request, so bytes are saved as stored.
func HTTPClient(opts ClientOptions) aws.HTTPClient {
	return opts.decorate(buildableClient(opts))
}

// decorate wraps the tuned client in what every request needs:
// Accept-Encoding: identity and, when asked, the handshake count.
func (opts ClientOptions) decorate(c aws.HTTPClient) aws.HTTPClient {
	c = identity{c}
	if opts.Handshakes != nil {
		c = opts.Handshakes.Client(c)
	}
	return c
}

// buildableClient is the tuned client before decoration; the SDK needs
// its builder methods to add a custom CA bundle (AWS_CA_BUNDLE).
func buildableClient(opts ClientOptions) *awshttp.BuildableClient {
	conns := max(opts.Conns, 16)
	return awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
		t.MaxIdleConns = conns * 2
		t.MaxIdleConnsPerHost = conns * 2
		t.MaxConnsPerHost = 0
		t.DisableCompression = true
		t.IdleConnTimeout = 90 * time.Second
		// A safety net for the SDK's calls (listing, HEAD); object GETs
		// are watched for stalls by the engine, much sooner.
		t.ResponseHeaderTimeout = 2 * time.Minute
		t.ExpectContinueTimeout = 0
		if opts.DialContext != nil {
			t.DialContext = opts.DialContext
		}
		if opts.TLS.Insecure {
			if t.TLSClientConfig == nil {
				t.TLSClientConfig = &tls.Config{}
			}
			t.TLSClientConfig.InsecureSkipVerify = true
		}
	})
}

// identity asks for bytes as stored.
type identity struct{ c aws.HTTPClient }

func (i identity) Do(r *http.Request) (*http.Response, error) {
	r.Header.Set("Accept-Encoding", "identity")
	return i.c.Do(r)
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
	load = append(load, config.WithHTTPClient(buildableClient(opts)),
		// The SDK would print its own warnings to stderr; s3pd reports
		// errors itself, one line each.
		config.WithLogger(logging.Nop{}))
	if opts.NoSignRequest {
		load = append(load, config.WithCredentialsProvider(aws.AnonymousCredentials{}))
	}
	if opts.TLS.CABundle != "" {
		pem, err := os.ReadFile(opts.TLS.CABundle)
		if err != nil {
			return nil, fmt.Errorf("ca bundle: %w", err)
		}
		load = append(load, config.WithCustomCABundle(bytes.NewReader(pem)))
	}
	cfg, err := config.LoadDefaultConfig(ctx, load...)
	if err != nil {
		return nil, fmt.Errorf("aws config: %w", err)
	}
	cfg.HTTPClient = opts.decorate(cfg.HTTPClient)
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
		// Listing, HEAD and uploads go through the SDK: ten attempts,
		// and no shared retry token bucket, which empties at high
		// fan-out and then fails work that would have succeeded.
		// A connection that cannot be made (refused, no such host,
		// timed out) fails at once with a clear error rather than after
		// ten silent attempts; waits are capped at 5 s.
		o.Retryer = reportingRetryer{retry.NewStandard(func(so *retry.StandardOptions) {
			so.MaxAttempts = 10
			so.MaxBackoff = 5 * time.Second
			so.RateLimiter = ratelimit.None
			so.Retryables = append([]retry.IsErrorRetryable{retry.IsErrorRetryableFunc(noRetryOnDial)}, so.Retryables...)
		}), opts.OnRetry}
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.DisableLogOutputChecksumValidationSkipped = true
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
				return nil, fmt.Errorf("detect region of bucket %s: %w", bucket, err)
			}
			cfg.Region = region
		}
	}
	return s3.NewFromConfig(cfg, configure), nil
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

// dialFailed reports whether err is a failure to connect: refused, no
// such host, or a connect timeout.
func dialFailed(err error) bool {
	var op *net.OpError
	var dns *net.DNSError
	return errors.As(err, &dns) || errors.As(err, &op) && op.Op == "dial"
}
