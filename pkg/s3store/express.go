package s3store

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// directorySuffix ends every directory bucket's name: BASE--ZONEID--x-s3.
const directorySuffix = "--x-s3"

// IsDirectoryBucket reports whether bucket has the form of a directory
// bucket (S3 Express One Zone), BASE--ZONEID--x-s3.
func IsDirectoryBucket(bucket string) bool { return DirectoryZone(bucket) != "" }

// DirectoryZone is the availability zone id of a directory bucket's
// name ("use1-az4" of "data--use1-az4--x-s3"), or "" for any other name.
func DirectoryZone(bucket string) string {
	base, ok := strings.CutSuffix(bucket, directorySuffix)
	if !ok {
		return ""
	}
	i := strings.LastIndex(base, "--")
	if i <= 0 || i+2 >= len(base) {
		return ""
	}
	return base[i+2:]
}

// ZonalEndpoint is the endpoint URL of a directory bucket in region, as
// the SDK's endpoint rules build it.
func ZonalEndpoint(bucket, region string) string { return "https://" + zonalHost(bucket, region) }

// zonalHost is the zonal endpoint's host of a directory bucket, as the
// SDK's endpoint rules build it.
func zonalHost(bucket, region string) string {
	return bucket + ".s3express-" + DirectoryZone(bucket) + "." + region + ".amazonaws.com"
}

// Sessions is the cache of S3 Express session credentials of a run: one
// set per directory bucket, made by CreateSession, shared by s3pd's own
// signed requests and the SDK's (uploads, listings through the SDK),
// which reach it as the SDK client's ExpressCredentials. A set is renewed
// in the background at 80% of its lifetime or a minute before it
// expires, whichever is later, by one CreateSession at a time; requests
// keep the old set meanwhile and wait only for a set that has expired.
// The zero value is not ready; use NewSessions.
type Sessions struct {
	now    func() time.Time
	create func(ctx context.Context, bucket string) (aws.Credentials, error)

	mu      sync.Mutex
	buckets map[string]*sessionEntry
	// fast holds the same entries for the lock-free path of Retrieve:
	// a request between renewals takes no lock.
	fast sync.Map // bucket -> *sessionEntry
}

// sessionEntry is one bucket's session credentials.
type sessionEntry struct {
	creds     aws.Credentials
	refreshAt time.Time
	// renewing is closed when the CreateSession in flight ends (nil:
	// none in flight).
	renewing chan struct{}
	err      error // of the last CreateSession, when no set is valid
	// fresh is the set while it needs no renewal, for the lock-free path.
	fresh atomic.Pointer[freshSession]
}

// freshSession is a set of credentials and when it is to be renewed.
type freshSession struct {
	creds     aws.Credentials
	refreshAt time.Time
}

// NewSessions returns an empty cache; Bind names the client that makes
// its sessions.
func NewSessions() *Sessions {
	return &Sessions{now: time.Now, buckets: map[string]*sessionEntry{}}
}

// Bind makes client's CreateSession the source of new sessions. It is
// called once, after the client is built (the client holds the cache as
// its ExpressCredentials).
func (s *Sessions) Bind(client *s3.Client) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.create != nil {
		return
	}
	s.create = func(ctx context.Context, bucket string) (aws.Credentials, error) {
		out, err := client.CreateSession(ctx, &s3.CreateSessionInput{Bucket: aws.String(bucket)})
		if err != nil {
			return aws.Credentials{}, sessionError(bucket, client.Options().Region, err)
		}
		c := out.Credentials
		if c == nil || c.AccessKeyId == nil || c.SecretAccessKey == nil || c.SessionToken == nil || c.Expiration == nil {
			return aws.Credentials{}, fmt.Errorf("create session for s3://%s: the answer lacks credentials", bucket)
		}
		return aws.Credentials{AccessKeyID: *c.AccessKeyId, SecretAccessKey: *c.SecretAccessKey,
			SessionToken: *c.SessionToken, CanExpire: true, Expires: *c.Expiration, Source: "CreateSession"}, nil
	}
}

// sessionError names what a failed CreateSession most likely lacks.
func sessionError(bucket, region string, err error) error {
	if dialFailed(err) {
		// On AWS a zonal host of another region's zone does not resolve.
		return fmt.Errorf("create session for s3://%s: the endpoint cannot be reached (is zone %s in region %s?): %w", bucket, DirectoryZone(bucket), region, err)
	}
	var se interface{ ErrorCode() string }
	if errors.As(err, &se) {
		switch se.ErrorCode() {
		case "AccessDenied", "Forbidden":
			return fmt.Errorf("create session for s3://%s: access denied (the credentials need s3express:CreateSession on the bucket): %w", bucket, err)
		case "NoSuchBucket", "NotFound":
			return fmt.Errorf("create session for s3://%s: no such bucket (is the zone in the name in --region's region?): %w", bucket, err)
		}
	}
	return fmt.Errorf("create session for s3://%s: %w", bucket, err)
}

// refreshPoint is when a set obtained at got and expiring at expires is
// renewed: at 80% of its lifetime or a minute before it expires,
// whichever is later.
func refreshPoint(got, expires time.Time) time.Time {
	life := expires.Sub(got)
	return got.Add(max(life*4/5, life-time.Minute))
}

// Retrieve implements s3.ExpressCredentialsProvider: the session
// credentials of bucket.
func (s *Sessions) Retrieve(ctx context.Context, bucket string) (aws.Credentials, error) {
	if v, ok := s.fast.Load(bucket); ok {
		if f := v.(*sessionEntry).fresh.Load(); f != nil && s.now().Before(f.refreshAt) {
			return f.creds, nil
		}
	}
	for {
		s.mu.Lock()
		e := s.buckets[bucket]
		if e == nil {
			e = &sessionEntry{}
			s.buckets[bucket] = e
			s.fast.Store(bucket, e)
		}
		now := s.now()
		valid := e.creds.AccessKeyID != "" && now.Before(e.creds.Expires)
		if (!valid || !now.Before(e.refreshAt)) && e.renewing == nil {
			if s.create == nil {
				s.mu.Unlock()
				return aws.Credentials{}, fmt.Errorf("session credentials for s3://%s: no client to create them", bucket)
			}
			e.renewing = make(chan struct{})
			go s.renew(bucket, e)
		}
		if valid {
			creds := e.creds
			s.mu.Unlock()
			return creds, nil
		}
		wait, err := e.renewing, e.err
		s.mu.Unlock()
		if wait == nil {
			return aws.Credentials{}, err
		}
		select {
		case <-wait:
			s.mu.Lock()
			err, valid := e.err, e.creds.AccessKeyID != "" && s.now().Before(e.creds.Expires)
			s.mu.Unlock()
			if !valid {
				if err == nil {
					err = fmt.Errorf("session credentials for s3://%s expired at once", bucket)
				}
				return aws.Credentials{}, err
			}
		case <-ctx.Done():
			return aws.Credentials{}, fmt.Errorf("session credentials for s3://%s: %w", bucket, ctx.Err())
		}
	}
}

// renew makes a new set for bucket, on a context of its own: the request
// that happened to start it may end before it does.
func (s *Sessions) renew(bucket string, e *sessionEntry) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got := s.now()
	creds, err := s.create(ctx, bucket)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil {
		e.creds, e.refreshAt, e.err = creds, refreshPoint(got, creds.Expires), nil
		e.fresh.Store(&freshSession{creds, e.refreshAt})
	} else {
		e.err = err
		// Try again at the next request, not at every one meanwhile.
		e.refreshAt = s.now().Add(time.Second)
	}
	close(e.renewing)
	e.renewing = nil
}

// SignExpress signs r as the SDK's S3 Express signer does: SigV4 for the
// s3express service with the session token in a signed
// x-amz-s3session-token header, and no X-Amz-Security-Token.
func (s *Signer) SignExpress(r *http.Request, session aws.Credentials, payloadHash, region string, now time.Time) {
	r.Header["X-Amz-S3session-Token"] = []string{session.SessionToken}
	session.SessionToken = ""
	s.Sign(r, session, payloadHash, "s3express", region, now)
}

// checkDirectory refuses what a directory bucket cannot be reached with:
// anonymous requests, and no region on AWS (its name gives a zone id,
// not the region).
func checkDirectory(bucket, region string, opts ClientOptions) error {
	if opts.NoSignRequest {
		return fmt.Errorf("directory bucket %s: anonymous requests are not supported (its requests are signed with session credentials)", bucket)
	}
	if region == "" && opts.EndpointURL == "" {
		return fmt.Errorf("directory bucket %s: no region: set --region or the profile's region (the zone id %s in the name does not give it)", bucket, DirectoryZone(bucket))
	}
	return nil
}

// listPrefix is the prefix a listing of prefix asks bucket for. A
// directory bucket lists only prefixes that end in the delimiter, so a
// listing of "data/a" asks for its parent "data/" and keeps what starts
// with "data/a": it reads the parent's whole listing to do so.
func listPrefix(bucket, prefix string) string {
	if prefix == "" || strings.HasSuffix(prefix, "/") || !IsDirectoryBucket(bucket) {
		return prefix
	}
	return prefix[:strings.LastIndexByte(prefix, '/')+1]
}
