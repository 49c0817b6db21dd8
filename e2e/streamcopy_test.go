package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3pd/s3pd/pkg/s3emu"
)

// tlsClient is an S3 client that trusts ts's certificate.
func tlsClient(ts *s3emu.TestServer) *s3.Client {
	hc := awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
		tr.TLSClientConfig = &tls.Config{RootCAs: ts.CertPool()}
	})
	return s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(ts.URL), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""), HTTPClient: hc})
}

// TestCrossStoreCopyOverTLS: s3pd's copy from one emulator to another
// over HTTPS streams the bytes with their checksum in an aws-chunked
// trailer; the destination stores the source's bytes exactly, in one
// PutObject and in parts.
func TestCrossStoreCopyOverTLS(t *testing.T) {
	src := s3emu.NewTLSTestServer(t, s3emu.Options{Backend: s3emu.BackendMemory})
	dst := s3emu.NewTLSTestServer(t, s3emu.Options{Backend: s3emu.BackendMemory})
	var both []byte
	for _, ca := range []string{src.CAFile, dst.CAFile} {
		b, err := os.ReadFile(ca)
		if err != nil {
			t.Fatal(err)
		}
		both = append(both, b...)
	}
	bundle := filepath.Join(t.TempDir(), "both.pem")
	if err := os.WriteFile(bundle, both, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sc, dc := tlsClient(src), tlsClient(dst)
	objects := map[string][]byte{"one": randomBytes(21, 1_000_000), "parts": randomBytes(22, 12<<20)}
	for k, b := range objects {
		if _, err := sc.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bench"), Key: aws.String(k), Body: bytes.NewReader(b)}); err != nil {
			t.Fatal(err)
		}
	}
	for k, want := range objects {
		r := run(t, nil, "copy", "--endpoint-url", dst.URL, "--source-endpoint-url", src.URL, "--ca-bundle", bundle,
			"--region", "us-east-1", "--no-sign-request", "--partsize", "5MiB", "s3://bench/"+k, "s3://bench/"+k+"-copy")
		if r.code != 0 {
			t.Fatalf("copy %s: exit %d\n%s", k, r.code, r.stderr)
		}
		out, err := dc.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bench"), Key: aws.String(k + "-copy")})
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(out.Body)
		out.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s copied: %d bytes (sha256 %s), want %d (%s)", k, len(got), sum(got), len(want), sum(want))
		}
	}
}
