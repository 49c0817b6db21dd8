package e2e

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3pd/s3pd/pkg/s3emu"
)

// TestCopyBetweenTwoProfiles: a profile is a whole side. SRC is an
// emulator over HTTPS whose bucket lives in eu-west-2 (a request signed
// for another region is refused), DEST a second emulator over plain
// HTTP; each is named only by its profile (AWS_CA_BUNDLE, which beats a
// profile's ca_bundle as for the AWS CLI, is unset): --source-profile's
// endpoint_url, region and ca_bundle reach SRC, --profile's DEST.
func TestCopyBetweenTwoProfiles(t *testing.T) {
	src := s3emu.NewTLSTestServer(t, s3emu.Options{Backend: s3emu.BackendMemory, Buckets: []string{"srcb"},
		Regions: map[string]string{"srcb": "eu-west-2"}, LogRequests: true})
	dst := s3emu.NewTestServer(t, s3emu.Options{Backend: s3emu.BackendMemory, Buckets: []string{"dstb"}, LogRequests: true})
	srcClient := s3.New(s3.Options{Region: "eu-west-2", BaseEndpoint: aws.String(src.URL), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""), HTTPClient: src.Client()})
	want := map[string][]byte{"a.bin": randomBytes(1, 3<<20), "d/b.txt": []byte("hello")}
	for k, v := range want {
		if _, err := srcClient.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("srcb"),
			Key: aws.String("p/" + k), Body: bytes.NewReader(v)}); err != nil {
			t.Fatalf("put %s: %v", k, err)
		}
	}
	home := t.TempDir()
	cfg := filepath.Join(home, "config")
	text := "[profile emu]\nendpoint_url = " + src.URL + "\nregion = eu-west-2\nca_bundle = " + src.CAFile +
		"\n[profile other]\nendpoint_url = " + dst.URL + "\nregion = us-east-1\n"
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	creds := filepath.Join(home, "credentials")
	if err := os.WriteFile(creds, []byte("[emu]\naws_access_key_id = EMU\naws_secret_access_key = emu\n[other]\naws_access_key_id = OTHER\naws_secret_access_key = other\n[default]\naws_access_key_id = DEF\naws_secret_access_key = def\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"AWS_CONFIG_FILE=" + cfg, "AWS_SHARED_CREDENTIALS_FILE=" + creds, "AWS_ACCESS_KEY_ID=", "AWS_SECRET_ACCESS_KEY=", "AWS_CA_BUNDLE="}
	r := run(t, env, "copy", "--no-progress", "--source-profile", "emu", "--profile", "other", "s3://srcb/p/", "s3://dstb/q/")
	if r.code != 0 {
		t.Fatalf("copy --source-profile emu --profile other: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	dstClient := newClient(t, dst.URL)
	for k, v := range want {
		out, err := dstClient.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("dstb"), Key: aws.String("q/" + k)})
		if err != nil {
			t.Errorf("DEST q/%s: %v", k, err)
			continue
		}
		got, _ := io.ReadAll(out.Body)
		out.Body.Close()
		if !bytes.Equal(got, v) {
			t.Errorf("DEST q/%s: %d bytes, not the %d of SRC", k, len(got), len(v))
		}
	}
	for _, req := range dst.Log() {
		if req.Bucket == "srcb" {
			t.Errorf("DEST's server was sent a request for SRC's bucket: %s %s/%s?%s", req.Method, req.Bucket, req.Key, req.Query)
		}
	}
	if n := len(src.Log()); n == 0 {
		t.Errorf("SRC's server was sent no request")
	}

	// --endpoint-url is DEST's: SRC is still its profile's.
	r = run(t, env, "copy", "--no-progress", "--source-profile", "emu",
		"--endpoint-url", dst.URL, "--region", "us-east-1", "s3://srcb/p/", "s3://dstb/r/")
	if r.code != 0 {
		t.Fatalf("copy --source-profile emu --endpoint-url DEST: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := dstClient.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String("dstb"), Key: aws.String("r/a.bin")}); err != nil {
		t.Errorf("DEST r/a.bin: %v", err)
	}

	// A source profile that does not exist is named.
	r = run(t, env, "copy", "--source-profile", "nope", "--profile", "other", "s3://srcb/p/", "s3://dstb/q/")
	if r.code != 2 || !strings.Contains(r.stderr, "--source-profile") || !strings.Contains(r.stderr, "nope") {
		t.Errorf("copy --source-profile nope: exit %d, %q; want 2 naming --source-profile nope", r.code, r.stderr)
	}
}
