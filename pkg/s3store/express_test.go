package s3store

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// capture records the last request it is given and answers 200 with an
// empty body.
type capture struct {
	mu   sync.Mutex
	last *http.Request
}

func (c *capture) Do(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.last = r
	c.mu.Unlock()
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Length": {"0"}},
		Body: io.NopCloser(strings.NewReader("")), Request: r}, nil
}

// fixedSessions hands out one set of session credentials.
type fixedSessions struct{ creds aws.Credentials }

func (f fixedSessions) Retrieve(context.Context, string) (aws.Credentials, error) {
	return f.creds, nil
}

// randomKey is a key of 1 to 40 characters drawn from every printable
// ASCII character, some multi-byte ones and runs of "/".
func randomKey(rng *rand.Rand) string {
	extra := []string{"é", "€", "日本", "//", " ", "%2F", "+", "~"}
	var b strings.Builder
	for n := 1 + rng.IntN(40); b.Len() < n; {
		if rng.IntN(8) == 0 {
			b.WriteString(extra[rng.IntN(len(extra))])
		} else {
			b.WriteByte(byte(0x20 + rng.IntN(0x7f-0x20)))
		}
	}
	return b.String()
}

// TestExpressSignerMatchesSDK is the differential test of s3pd's S3
// Express requests: for random GETs and HEADs of random keys, ranges and
// conditions, an SDK client (with its own express signer and endpoint
// rules) and s3pd's getter each send the request through a capturing
// HTTP client; s3pd's URL and headers must be the SDK's, and s3pd's
// signer, signing the SDK's request for the SDK's time, must produce the
// SDK's Authorization.
func TestExpressSignerMatchesSDK(t *testing.T) {
	const bucket = "train-data--usw2-az1--x-s3"
	const n = 1500
	rng := rand.New(rand.NewPCG(36, 1))
	session := aws.Credentials{AccessKeyID: "ASIASESSION", SecretAccessKey: "session/secret+key", SessionToken: "token+/=abc", CanExpire: true, Expires: time.Now().Add(time.Hour)}
	sdkHC, ourHC := &capture{}, &capture{}
	newClient := func(hc aws.HTTPClient) *s3.Client {
		return s3.New(s3.Options{
			Region: "us-west-2",
			Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
				return aws.Credentials{AccessKeyID: "AKIDBASE", SecretAccessKey: "base"}, nil
			}),
			ExpressCredentials: fixedSessions{session},
			HTTPClient:         hc,
			RetryMaxAttempts:   1,
		})
	}
	sdk := newClient(sdkHC)
	g := newGetter(newClient(ourHC), bucket)
	ctx := context.Background()
	var signer Signer
	for i := range n {
		key := randomKey(rng)
		obj := &transfer.Object{Key: key}
		if rng.IntN(2) == 0 {
			obj.ETag = fmt.Sprintf(`"%032x"`, rng.Uint64())
		}
		off, length := int64(-1), int64(-1)
		if rng.IntN(3) > 0 {
			off, length = rng.Int64N(1<<40), 1+rng.Int64N(1<<30)
		}
		checksums := rng.IntN(2) == 0
		head := rng.IntN(4) == 0
		var rangeHdr, ifMatch *string
		if length > 0 {
			rangeHdr = aws.String(fmt.Sprintf("bytes=%d-%d", off, off+length-1))
		}
		if obj.ETag != "" {
			ifMatch = aws.String(obj.ETag)
		}
		var mode types.ChecksumMode
		if checksums {
			mode = types.ChecksumModeEnabled
		}
		var err error
		if head {
			_, err = sdk.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Range: rangeHdr, IfMatch: ifMatch, ChecksumMode: mode})
			if err == nil {
				_, err = g.do(ctx, http.MethodHead, obj, max(off, 0), length, Request{}, checksums)
			}
		} else {
			var out *s3.GetObjectOutput
			out, err = sdk.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Range: rangeHdr, IfMatch: ifMatch, ChecksumMode: mode})
			if err == nil {
				out.Body.Close()
				_, err = g.do(ctx, http.MethodGet, obj, max(off, 0), length, Request{}, checksums)
			}
		}
		if err != nil {
			t.Fatalf("request %d, key %q: %v", i, key, err)
		}
		theirs, ours := sdkHC.last, ourHC.last
		what := fmt.Sprintf("request %d: %s %q", i, theirs.Method, key)
		if ours.Method != theirs.Method || ours.URL.Host != theirs.URL.Host || ours.URL.EscapedPath() != theirs.URL.EscapedPath() {
			t.Fatalf("%s: s3pd sends %s %s%s, the SDK %s %s%s", what, ours.Method, ours.URL.Host, ours.URL.EscapedPath(),
				theirs.Method, theirs.URL.Host, theirs.URL.EscapedPath())
		}
		for _, h := range []string{"Range", "If-Match", "X-Amz-Checksum-Mode", "X-Amz-S3session-Token"} {
			if got, want := ours.Header.Get(h), theirs.Header.Get(h); got != want {
				t.Fatalf("%s: %s %q, the SDK's %q", what, h, got, want)
			}
		}
		if ours.Header.Get("X-Amz-Security-Token") != "" || theirs.Header.Get("X-Amz-Security-Token") != "" {
			t.Fatalf("%s: an X-Amz-Security-Token was sent", what)
		}
		for _, r := range []*http.Request{ours, theirs} {
			if a := r.Header.Get("Authorization"); !strings.Contains(a, "/us-west-2/s3express/aws4_request") || !strings.Contains(a, "x-amz-s3session-token") {
				t.Fatalf("%s: Authorization %q does not sign for s3express with the session token", what, a)
			}
		}
		// s3pd's signer over the SDK's own request, at the SDK's time.
		at, err := time.Parse("20060102T150405Z", theirs.Header.Get("X-Amz-Date"))
		if err != nil {
			t.Fatal(err)
		}
		resigned := theirs.Clone(ctx)
		resigned.Header.Del("Authorization")
		resigned.Header.Del("X-Amz-S3session-Token")
		signer.SignExpress(resigned, session, theirs.Header.Get("X-Amz-Content-Sha256"), "us-west-2", at)
		if got, want := resigned.Header.Get("Authorization"), theirs.Header.Get("Authorization"); got != want {
			t.Fatalf("%s with headers %v:\nAuthorization %q\nthe SDK's     %q", what, theirs.Header, got, want)
		}
	}
	// Listings: s3pd's signer over the SDK's ListObjectsV2 requests, whose
	// queries carry random prefixes, tokens and delimiters.
	for i := range 300 {
		in := &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(randomKey(rng) + "/"), EncodingType: types.EncodingTypeUrl}
		if rng.IntN(2) == 0 {
			in.Delimiter = aws.String("/")
		}
		if rng.IntN(2) == 0 {
			in.ContinuationToken = aws.String(randomKey(rng))
		}
		if _, err := sdk.ListObjectsV2(ctx, in); err != nil {
			t.Fatalf("listing %d: %v", i, err)
		}
		theirs := sdkHC.last
		at, _ := time.Parse("20060102T150405Z", theirs.Header.Get("X-Amz-Date"))
		resigned := theirs.Clone(ctx)
		resigned.Header.Del("Authorization")
		resigned.Header.Del("X-Amz-S3session-Token")
		signer.SignExpress(resigned, session, theirs.Header.Get("X-Amz-Content-Sha256"), "us-west-2", at)
		if got, want := resigned.Header.Get("Authorization"), theirs.Header.Get("Authorization"); got != want {
			t.Fatalf("listing %d, query %q:\nAuthorization %q\nthe SDK's     %q", i, theirs.URL.RawQuery, got, want)
		}
	}
}

func TestRefreshPoint(t *testing.T) {
	got := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct{ life, want time.Duration }{
		{10 * time.Second, 8 * time.Second}, // 80% is later than a minute before
		{5 * time.Minute, 4 * time.Minute},  // S3 Express's lifetime: both agree
		{time.Hour, 59 * time.Minute},       // a minute before is later
		{2 * time.Minute, 96 * time.Second}, // 96 s against 60 s
	} {
		if at := refreshPoint(got, got.Add(tc.life)).Sub(got); at != tc.want {
			t.Errorf("lifetime %v: renewed after %v, want %v", tc.life, at, tc.want)
		}
	}
}

// TestSessionsRenewWithoutStalling checks that a session is renewed at
// 80% of its lifetime by one CreateSession, while requests keep the old
// set and do not wait for it.
func TestSessionsRenewWithoutStalling(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewSessions()
		var calls atomic.Int32
		gate := make(chan struct{}, 10)
		s.create = func(ctx context.Context, bucket string) (aws.Credentials, error) {
			n := calls.Add(1)
			if n > 1 {
				<-gate
			}
			return aws.Credentials{AccessKeyID: fmt.Sprintf("S%d", n), SecretAccessKey: "x", SessionToken: "t",
				CanExpire: true, Expires: time.Now().Add(10 * time.Second)}, nil
		}
		ctx := context.Background()
		retrieve := func() string {
			c, err := s.Retrieve(ctx, "b--use1-az4--x-s3")
			if err != nil {
				t.Fatalf("Retrieve: %v", err)
			}
			return c.AccessKeyID
		}
		if got := retrieve(); got != "S1" {
			t.Fatalf("first set %s, want S1", got)
		}
		time.Sleep(7900 * time.Millisecond)
		if got := retrieve(); got != "S1" || calls.Load() != 1 {
			t.Fatalf("at 79%%: set %s after %d CreateSessions, want S1 after 1", got, calls.Load())
		}
		time.Sleep(200 * time.Millisecond)
		// Past 80%: the renewal starts and blocks on the gate; requests
		// meanwhile get the old set at once, and start no second one.
		var wg sync.WaitGroup
		for range 20 {
			wg.Go(func() {
				if got := retrieve(); got != "S1" {
					t.Errorf("during the renewal: set %s, want S1", got)
				}
			})
		}
		wg.Wait()
		synctest.Wait()
		if n := calls.Load(); n != 2 {
			t.Fatalf("%d CreateSessions during the renewal, want 2", n)
		}
		gate <- struct{}{}
		synctest.Wait()
		if got := retrieve(); got != "S2" {
			t.Fatalf("after the renewal: set %s, want S2", got)
		}
		// The old set expired with no renewal done: requests wait for one.
		time.Sleep(8100 * time.Millisecond)
		gate <- struct{}{}
		time.Sleep(2 * time.Second)
		if got := retrieve(); got != "S3" {
			t.Fatalf("after expiry: set %s, want S3", got)
		}
	})
}

// TestSessionErrorsNameTheCause checks that a failed CreateSession says
// what is most likely missing.
func TestSessionErrorsNameTheCause(t *testing.T) {
	for code, want := range map[string]string{
		"AccessDenied":  "the credentials need s3express:CreateSession on the bucket",
		"NoSuchBucket":  "is the zone in the name in --region's region?",
		"InternalError": "create session for s3://b--use1-az4--x-s3: api error InternalError",
	} {
		err := sessionError("b--use1-az4--x-s3", "us-east-1", &smithy.GenericAPIError{Code: code, Message: "m"})
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want it to say %q", code, err, want)
		}
	}
	dns := &net.DNSError{Err: "no such host", Name: "b--use1-az4--x-s3.s3express-use1-az4.us-west-2.amazonaws.com", IsNotFound: true}
	if err := sessionError("b--use1-az4--x-s3", "us-west-2", fmt.Errorf("dial: %w", dns)); !strings.Contains(err.Error(), "is zone use1-az4 in region us-west-2?") {
		t.Errorf("unresolvable zonal endpoint: %v, want it to ask whether the zone is in the region", err)
	}
}

// TestDirectoryNames checks which names are directory buckets and their
// zone, and the listing prefix the prefix rule asks for.
func TestDirectoryNames(t *testing.T) {
	for name, zone := range map[string]string{
		"data--use1-az4--x-s3": "use1-az4", "a-b--usw2-az1--x-s3": "usw2-az1",
		"data--x-s3": "", "--use1-az4--x-s3": "", "bucket": "", "data--use1-az4--x-s": "",
	} {
		if got := DirectoryZone(name); got != zone || IsDirectoryBucket(name) != (zone != "") {
			t.Errorf("DirectoryZone(%q) = %q, want %q", name, got, zone)
		}
	}
	for _, tc := range []struct{ bucket, prefix, want string }{
		{"d--use1-az4--x-s3", "data/a", "data/"},
		{"d--use1-az4--x-s3", "data/a/", "data/a/"},
		{"d--use1-az4--x-s3", "a", ""},
		{"d--use1-az4--x-s3", "", ""},
		{"general", "data/a", "data/a"},
	} {
		if got := listPrefix(tc.bucket, tc.prefix); got != tc.want {
			t.Errorf("listPrefix(%q, %q) = %q, want %q", tc.bucket, tc.prefix, got, tc.want)
		}
	}
}

// TestSessionsFastPathIsFree checks that a request between renewals
// takes its session without allocating (and without the lock).
func TestSessionsFastPathIsFree(t *testing.T) {
	s := NewSessions()
	s.create = func(context.Context, string) (aws.Credentials, error) {
		return aws.Credentials{AccessKeyID: "S", SecretAccessKey: "x", SessionToken: "t", CanExpire: true, Expires: time.Now().Add(time.Hour)}, nil
	}
	ctx := context.Background()
	if _, err := s.Retrieve(ctx, "b--use1-az4--x-s3"); err != nil {
		t.Fatal(err)
	}
	bucket := strings.Clone("b--use1-az4--x-s3") // not a constant: as a getter holds it
	if n := testing.AllocsPerRun(100, func() { s.Retrieve(ctx, bucket) }); n != 0 {
		t.Errorf("Retrieve between renewals: %v allocations, want 0", n)
	}
}

// BenchmarkSignExpress compares s3pd's express signing of a ranged GET
// with plain SigV4 (its one extra header) and with the SDK's signer
// doing what the SDK's express signer does.
func BenchmarkSignExpress(b *testing.B) {
	session := aws.Credentials{AccessKeyID: "ASIASESSION", SecretAccessKey: "secret", SessionToken: "token"}
	header := http.Header{"Range": {"bytes=0-8388607"}, "If-Match": {`"0123456789abcdef0123456789abcdef"`},
		"X-Amz-Checksum-Mode": {"ENABLED"}, "X-Amz-Content-Sha256": {unsignedPayload}}
	s := &Signer{}
	express := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping, o.DisableSessionToken = true, true })
	for _, signer := range []string{"s3pd-sigv4", "s3pd-express", "sdk-express"} {
		b.Run("signer="+signer, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r, _ := http.NewRequest("GET", "https://d--use1-az4--x-s3.s3express-use1-az4.us-east-1.amazonaws.com/big/00000001", nil)
				for k, v := range header {
					r.Header[k] = v
				}
				switch signer {
				case "s3pd-sigv4":
					s.Sign(r, session, unsignedPayload, "s3", "us-east-1", time.Now())
				case "s3pd-express":
					s.SignExpress(r, session, unsignedPayload, "us-east-1", time.Now())
				case "sdk-express":
					r.Header.Set("X-Amz-S3session-Token", session.SessionToken)
					express.SignHTTP(context.Background(), session, r, unsignedPayload, "s3express", "us-east-1", time.Now())
				}
			}
		})
	}
}
