package s3store

import (
	"context"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// sdkSigner is the SDK's signer as s3pd configured it before Signer.
var sdkSigner = v4.NewSigner(func(so *v4.SignerOptions) { so.DisableURIPathEscaping = true })

// compareSigners signs two copies of one request, with Signer and with the
// SDK, and reports what differs.
func compareSigners(t *testing.T, s *Signer, method, rawURL string, header http.Header, creds aws.Credentials, region string, now time.Time) {
	t.Helper()
	build := func() *http.Request {
		r, err := http.NewRequest(method, rawURL, nil)
		if err != nil {
			t.Fatalf("%s: %v", rawURL, err)
		}
		for k, vs := range header {
			r.Header[k] = append([]string(nil), vs...)
		}
		return r
	}
	ours, sdk := build(), build()
	s.Sign(ours, creds, unsignedPayload, "s3", region, now)
	if err := sdkSigner.SignHTTP(context.Background(), creds, sdk, unsignedPayload, "s3", region, now); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"Authorization", "X-Amz-Date", "X-Amz-Security-Token"} {
		if got, want := ours.Header.Get(name), sdk.Header.Get(name); got != want {
			t.Errorf("%s %s with %v:\n%s: %q\nwant %q", method, rawURL, header, name, got, want)
		}
	}
	if ours.Host != sdk.Host || ours.URL.RawQuery != sdk.URL.RawQuery {
		t.Errorf("%s %s: host %q query %q, want host %q query %q", method, rawURL, ours.Host, ours.URL.RawQuery, sdk.Host, sdk.URL.RawQuery)
	}
}

func TestSigV4MatchesSDK(t *testing.T) {
	creds := aws.Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"}
	withToken := creds
	withToken.SessionToken = "FwoGZXIvYXdzE//token+with/odd=chars"
	now := time.Date(2026, 11, 30, 9, 37, 4, 0, time.UTC)
	s := &Signer{}
	for _, tc := range []struct {
		name, method, url string
		header            http.Header
		creds             aws.Credentials
	}{
		{"ranged GET", "GET", "http://127.0.0.1:9000/bench/big/00000001", http.Header{
			"Range": {"bytes=0-8388607"}, "If-Match": {`"0123456789abcdef0123456789abcdef-8"`},
			"X-Amz-Content-Sha256": {unsignedPayload}}, creds},
		{"whole GET with checksums", "GET", "https://bucket.s3.us-west-2.amazonaws.com/dir/file.bin", http.Header{
			"X-Amz-Checksum-Mode": {"ENABLED"}, "X-Amz-Content-Sha256": {unsignedPayload}}, withToken},
		{"HEAD with every request header", "HEAD", "https://s3.eu-central-1.amazonaws.com/b/k", http.Header{
			"X-Amz-Request-Payer": {"requester"}, "X-Amz-Expected-Bucket-Owner": {"111122223333"},
			"X-Amz-Server-Side-Encryption-Customer-Algorithm": {"AES256"},
			"X-Amz-Server-Side-Encryption-Customer-Key":       {"MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="},
			"X-Amz-Server-Side-Encryption-Customer-Key-Md5":   {"abcd=="},
			"X-Amz-Content-Sha256":                            {unsignedPayload}}, withToken},
		{"listing query", "GET", "http://localhost:4566/bucket?list-type=2&prefix=a%20b%2Fc&continuation-token=xyz%2B%2F%3D&delimiter=%2F&max-keys=1000", nil, creds},
		{"version id and default port", "GET", "https://bucket.s3.amazonaws.com:443/key%20with%20spaces?versionId=3HL4kqtJlcpXroDTDmJ%2BrmSpXd3dIbrHY%2BMTRCxf3vjVBH40Nr8X8gdRQBpUMLUo", nil, creds},
		{"http default port", "GET", "http://example.com:80/b/%E2%82%AC/x", http.Header{"Range": {"bytes=5-9"}}, creds},
		{"ignored and spaced headers", "GET", "http://127.0.0.1:1234/b/k", http.Header{
			"User-Agent": {"s3pd/dev"}, "Expect": {"100-continue"}, "X-Amzn-Trace-Id": {"Root=1"},
			"X-Custom": {"  a   b  ", "c"}, "Accept-Encoding": {"identity"}}, creds},
		{"opaque-looking path", "GET", "http://h/b/a//b/../c", nil, creds},
		{"empty path", "GET", "http://h", nil, creds},
		{"IPv6 host", "GET", "http://[::1]:80/b/k", nil, creds},
	} {
		t.Run(tc.name, func(t *testing.T) {
			compareSigners(t, s, tc.method, tc.url, tc.header, tc.creds, "us-east-1", now)
		})
	}
}

// TestSigV4MatchesSDKRandom signs random keys, queries, header values,
// regions, times and credentials with both signers.
func TestSigV4MatchesSDKRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const alphabet = "abcXYZ019 -_.~!*'()/+=&?%:;,@$#[]\"\\<>^`{|}é€😀\t"
	word := func(n int) string {
		var b strings.Builder
		rs := []rune(alphabet)
		for range rng.IntN(n) + 1 {
			b.WriteRune(rs[rng.IntN(len(rs))])
		}
		return b.String()
	}
	s := &Signer{}
	regions := []string{"us-east-1", "eu-west-3", "ap-southeast-2", "cn-north-1"}
	for i := range 2000 {
		creds := aws.Credentials{AccessKeyID: "AKID" + word(6), SecretAccessKey: word(40)}
		if rng.IntN(2) == 0 {
			creds.SessionToken = word(30)
		}
		u := "http://127.0.0.1:9000/bucket/" + escapeKey(word(20))
		if rng.IntN(2) == 0 {
			u += "?" + escapeQuery(word(5)) + "=" + escapeQuery(word(8)) + "&versionId=" + escapeQuery(word(8))
		}
		header := http.Header{"X-Amz-Content-Sha256": {unsignedPayload}}
		if rng.IntN(2) == 0 {
			header.Set("Range", "bytes=0-"+strings.Repeat("9", rng.IntN(10)+1))
		}
		if rng.IntN(2) == 0 {
			header.Set("If-Match", `"`+word(10)+`"`)
		}
		if rng.IntN(3) == 0 {
			header.Set("X-Amz-Meta-"+strings.ReplaceAll(strings.Map(func(r rune) rune {
				if r < 'a' || r > 'z' {
					return -1
				}
				return r
			}, word(8)), " ", ""), strings.ReplaceAll(word(12), "\t", " "))
		}
		now := time.Unix(rng.Int64N(4e9), 0)
		compareSigners(t, s, []string{"GET", "HEAD"}[i%2], u, header, creds, regions[rng.IntN(len(regions))], now)
		if t.Failed() {
			return
		}
	}
}

func BenchmarkSign(b *testing.B) {
	creds := aws.Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "secret"}
	header := http.Header{"Range": {"bytes=0-8388607"}, "If-Match": {`"0123456789abcdef0123456789abcdef"`},
		"X-Amz-Checksum-Mode": {"ENABLED"}, "X-Amz-Content-Sha256": {unsignedPayload}}
	s := &Signer{}
	for _, signer := range []string{"none", "sdk", "s3pd"} {
		b.Run("signer="+signer, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r, _ := http.NewRequest("GET", "http://127.0.0.1:9000/bench/big/00000001", nil)
				for k, v := range header {
					r.Header[k] = v
				}
				switch signer {
				case "sdk":
					sdkSigner.SignHTTP(context.Background(), creds, r, unsignedPayload, "s3", "us-east-1", time.Now())
				case "s3pd":
					s.Sign(r, creds, unsignedPayload, "s3", "us-east-1", time.Now())
				}
			}
		})
	}
}
