package s3emu

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

const testDirBucket = "data--use1-az4--x-s3"

// expressClient is an SDK client with its own S3 Express support, signed
// with made-up base credentials.
func expressClient(endpoint string, opt ...func(*s3.Options)) *s3.Client {
	return s3.New(s3.Options{
		Region:           "us-east-1",
		BaseEndpoint:     aws.String(endpoint),
		UsePathStyle:     true,
		Credentials:      aws.NewCredentialsCache(staticCreds{}),
		HTTPClient:       awshttp.NewBuildableClient(),
		RetryMaxAttempts: 1,
	}, opt...)
}

type staticCreds struct{}

func (staticCreds) Retrieve(context.Context) (aws.Credentials, error) {
	return aws.Credentials{AccessKeyID: "AKIDBASE", SecretAccessKey: "base-secret", Source: "test"}, nil
}

func TestIsDirectoryBucket(t *testing.T) {
	for name, want := range map[string]bool{
		"data--use1-az4--x-s3": true, "a--usw2-az1--x-s3": true,
		"data--x-s3": false, "--use1-az4--x-s3": false, "data--use1-az4--x-s": false, "bench": false,
	} {
		if got := IsDirectoryBucket(name); got != want {
			t.Errorf("IsDirectoryBucket(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestExpressSDKClient checks the emulator's directory bucket with the
// SDK's own S3 Express code: CreateSession, then PUT, HEAD, GET and
// listings signed with the session, in the emulator's order.
func TestExpressSDKClient(t *testing.T) {
	ts := NewTestServer(t, Options{Backend: BackendMemory, Buckets: []string{testDirBucket}})
	c := expressClient(ts.URL)
	ctx := context.Background()
	var keys []string
	for i := range 30 {
		k := fmt.Sprintf("dir/k%02d +=&%%.bin", i)
		keys = append(keys, k)
		body := bytes.Repeat([]byte{byte(i)}, 100+i)
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(testDirBucket), Key: aws.String(k), Body: bytes.NewReader(body)}); err != nil {
			t.Fatalf("PutObject %s: %v", k, err)
		}
	}
	head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(testDirBucket), Key: aws.String(keys[3])})
	if err != nil {
		t.Fatalf("HeadObject: %v", err)
	}
	if got := aws.ToInt64(head.ContentLength); got != 103 {
		t.Errorf("HeadObject size %d, want 103", got)
	}
	_, b := getAll(t, c, &s3.GetObjectInput{Bucket: aws.String(testDirBucket), Key: aws.String(keys[5]), Range: aws.String("bytes=1-4")})
	if !bytes.Equal(b, []byte{5, 5, 5, 5}) {
		t.Errorf("ranged GET = %v, want four 5s", b)
	}
	var listed []string
	p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String(testDirBucket), Prefix: aws.String("dir/"), MaxKeys: aws.Int32(7)})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			t.Fatalf("ListObjectsV2: %v", err)
		}
		for _, o := range out.Contents {
			listed = append(listed, aws.ToString(o.Key))
		}
	}
	if slices.IsSorted(listed) {
		t.Errorf("listing in key order, want the emulator's unordered pages: %q", listed)
	}
	slices.Sort(listed)
	if !slices.Equal(listed, keys) {
		t.Errorf("listed %q, want %q", listed, keys)
	}
	if n := ts.SessionsCreated(); n != 1 {
		t.Errorf("%d sessions created, want 1 shared by every request", n)
	}
	// CopyObject is signed with the base credentials, as the SDK sends it.
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(testDirBucket), Key: aws.String("src/a"), Body: strings.NewReader("copied")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(testDirBucket), Key: aws.String("dst/a"),
		CopySource: aws.String(testDirBucket + "/src/a")}); err != nil {
		t.Fatalf("CopyObject: %v", err)
	}
	if _, b = getAll(t, c, &s3.GetObjectInput{Bucket: aws.String(testDirBucket), Key: aws.String("dst/a")}); string(b) != "copied" {
		t.Errorf("copied object: %q, want %q", b, "copied")
	}
}

// TestExpressRefusals checks what a directory bucket refuses: requests
// without a session, with a forged signature or a dead session, and a
// prefix that does not end in the delimiter.
func TestExpressRefusals(t *testing.T) {
	ts := NewTestServer(t, Options{Backend: BackendMemory, Buckets: []string{testDirBucket}, SessionLifetime: time.Hour}) // no renewal by the SDK meanwhile
	ctx := context.Background()
	c := expressClient(ts.URL)
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(testDirBucket), Key: aws.String("a/b"), Body: strings.NewReader("x")}); err != nil {
		t.Fatalf("PutObject: %v", err)
	}
	head := func(c *s3.Client) error {
		_, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(testDirBucket), Key: aws.String("a/b")})
		return err
	}
	plain := expressClient(ts.URL, func(o *s3.Options) { o.DisableS3ExpressSessionAuth = aws.Bool(true) })
	forged := expressClient(ts.URL, func(o *s3.Options) {
		o.HTTPClient = forge{awshttp.NewBuildableClient()}
	})
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"no session token", head(plain), "403"},
		{"forged signature", head(forged), "403"},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: %v, want a %s", tc.name, tc.err, tc.want)
		}
	}
	_, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(testDirBucket), Prefix: aws.String("a/b")})
	if errorCode(err) != "InvalidArgument" {
		t.Errorf("listing prefix a/b: %v, want InvalidArgument", err)
	}
	out, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(testDirBucket), Prefix: aws.String("a/")})
	if err != nil || len(out.Contents) != 1 {
		t.Errorf("listing prefix a/: %v, %d objects, want 1", err, len(out.Contents))
	}
	// A session past its lifetime is refused.
	creds, err := c.Options().ExpressCredentials.Retrieve(ctx, testDirBucket)
	if err != nil {
		t.Fatalf("session credentials: %v", err)
	}
	ts.sessions.mu.Lock()
	for k, s := range ts.sessions.byKey {
		s.expires = time.Now().Add(-time.Second)
		ts.sessions.byKey[k] = s
	}
	ts.sessions.mu.Unlock()
	stale := expressClient(ts.URL, func(o *s3.Options) { o.ExpressCredentials = fixedSession{creds} })
	if err := head(stale); err == nil || !strings.Contains(err.Error(), "400") {
		t.Errorf("expired session: %v, want a 400 ExpiredToken", err)
	}
}

// fixedSession hands out the same session credentials every time.
type fixedSession struct{ creds aws.Credentials }

func (f fixedSession) Retrieve(context.Context, string) (aws.Credentials, error) { return f.creds, nil }

// forge changes one byte of every signature.
type forge struct{ c aws.HTTPClient }

func (f forge) Do(r *http.Request) (*http.Response, error) {
	if a := r.Header.Get("Authorization"); strings.Contains(a, "/s3express/") && !r.URL.Query().Has("session") {
		last := a[len(a)-1]
		if last == '0' {
			last = '1'
		} else {
			last = '0'
		}
		r.Header.Set("Authorization", a[:len(a)-1]+string(last))
	}
	return f.c.Do(r)
}

// TestExpressETagsAreNotMD5s checks that a directory bucket's ETags have
// an MD5's form but are not the bytes' MD5, in HEAD, GET and listings, and
// that If-Match takes them.
func TestExpressETagsAreNotMD5s(t *testing.T) {
	ts := NewTestServer(t, Options{Backend: BackendMemory, Buckets: []string{testDirBucket}})
	c := expressClient(ts.URL)
	ctx := context.Background()
	body := []byte("directory bucket bytes")
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(testDirBucket), Key: aws.String("k"), Body: bytes.NewReader(body)}); err != nil {
		t.Fatal(err)
	}
	head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(testDirBucket), Key: aws.String("k")})
	if err != nil {
		t.Fatal(err)
	}
	etag := aws.ToString(head.ETag)
	if len(strings.Trim(etag, `"`)) != 32 || etag == md5hex(body) {
		t.Errorf("HEAD ETag %s, want 32 hex digits that are not the MD5 %s", etag, md5hex(body))
	}
	out, b := getAll(t, c, &s3.GetObjectInput{Bucket: aws.String(testDirBucket), Key: aws.String("k"), IfMatch: aws.String(etag)})
	if !bytes.Equal(b, body) || aws.ToString(out.ETag) != etag {
		t.Errorf("GET If-Match %s: %q with ETag %s", etag, b, aws.ToString(out.ETag))
	}
	list, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(testDirBucket)})
	if err != nil || len(list.Contents) != 1 || aws.ToString(list.Contents[0].ETag) != etag {
		t.Errorf("listing: %v, want the one object with ETag %s", err, etag)
	}
	if _, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(testDirBucket), Key: aws.String("k"), IfMatch: aws.String(md5hex(body))}); errorCode(err) != "PreconditionFailed" {
		t.Errorf("GET If-Match the MD5: %v, want PreconditionFailed", err)
	}
}
