package s3emu

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
)

// start runs an emulator on loopback for the test.
func start(t testing.TB, opts Options) (*Server, string) {
	t.Helper()
	ts := NewTestServer(t, opts)
	return ts.Server, ts.URL
}

// client returns an anonymous path-style S3 client for endpoint, without
// retries so that faults show.
func client(endpoint string) *s3.Client {
	return s3.New(s3.Options{
		Region:           "us-east-1",
		BaseEndpoint:     aws.String(endpoint),
		UsePathStyle:     true,
		Credentials:      aws.AnonymousCredentials{},
		HTTPClient:       awshttp.NewBuildableClient(),
		RetryMaxAttempts: 1,
	})
}

// raw sends a request with headers and returns the response and its body.
func raw(t testing.TB, method, url string, body io.Reader, hdr map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, url, err)
	}
	return resp, b
}

func synthetic(key string, off, n int64) []byte {
	p := make([]byte, n)
	SyntheticBytes(key, off, p)
	return p
}

func md5hex(p []byte) string {
	s := md5.Sum(p)
	return `"` + hex.EncodeToString(s[:]) + `"`
}

func errorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

func getAll(t testing.TB, c *s3.Client, in *s3.GetObjectInput) (*s3.GetObjectOutput, []byte) {
	t.Helper()
	out, err := c.GetObject(context.Background(), in)
	if err != nil {
		t.Fatalf("GetObject %s %v: %v", aws.ToString(in.Key), aws.ToString(in.Range), err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatalf("GetObject %s: read: %v", aws.ToString(in.Key), err)
	}
	return out, b
}
