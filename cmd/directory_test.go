package cmd

import (
	"bytes"
	"context"
	"encoding/xml"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestBenchServeDirectoryBucket checks that bench serve makes a
// directory bucket of a --bucket of that form, whose CreateSession gives
// sessions of --session-lifetime, and refuses its objects without one.
func TestBenchServeDirectoryBucket(t *testing.T) {
	const bucket = "d--use1-az4--x-s3"
	ep, stop := runServe(t, "--listen", "127.0.0.1:0", "--backend", "memory", "--bucket", bucket, "--session-lifetime", "90s")
	defer stop()
	req, _ := http.NewRequest(http.MethodGet, ep+"/"+bucket+"?session", nil)
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=AKID/20261201/us-east-1/s3express/aws4_request, SignedHeaders=host;x-amz-date, Signature=00")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var res struct {
		Credentials struct{ SessionToken, Expiration string }
	}
	if resp.StatusCode != 200 || xml.Unmarshal(body, &res) != nil || res.Credentials.SessionToken == "" {
		t.Fatalf("CreateSession: %d %s", resp.StatusCode, body)
	}
	exp, err := time.Parse(time.RFC3339, res.Credentials.Expiration)
	if left := time.Until(exp); err != nil || left < 80*time.Second || left > 91*time.Second {
		t.Errorf("session expires %q (in %v), want in about 90s", res.Credentials.Expiration, time.Until(exp))
	}
	resp, err = http.Get(ep + "/" + bucket + "/k")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("an unsigned GET of the directory bucket: status %d, want 403", resp.StatusCode)
	}
}

// TestConfigShowNamesDirectoryBuckets checks what config show says of
// the bucket a URL names, in text and JSON, with no request.
func TestConfigShowNamesDirectoryBuckets(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"config", "show", "--region", "us-west-2", "s3://train--usw2-az1--x-s3/data/"},
			"bucket: train--usw2-az1--x-s3: directory bucket (S3 Express One Zone, zone usw2-az1), zonal endpoint https://train--usw2-az1--x-s3.s3express-usw2-az1.us-west-2.amazonaws.com"},
		{[]string{"config", "show", "s3://train--usw2-az1--x-s3"}, "no region set: give --region"},
		{[]string{"config", "show", "--endpoint-url", "http://127.0.0.1:9000", "s3://train--usw2-az1--x-s3"}, "zonal endpoint http://127.0.0.1:9000"},
		{[]string{"config", "show", "s3://plain-bucket"}, "bucket: plain-bucket: general purpose bucket"},
		{[]string{"config", "show", "--json", "--region", "us-west-2", "s3://train--usw2-az1--x-s3"},
			`"bucket": {
    "name": "train--usw2-az1--x-s3",
    "kind": "directory",
    "zone": "usw2-az1",
    "endpoint": "https://train--usw2-az1--x-s3.s3express-usw2-az1.us-west-2.amazonaws.com"`},
	} {
		copyEnv(t)
		var out, errOut bytes.Buffer
		code := Execute(context.Background(), &IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, "test", tc.args)
		if code != 0 || !strings.Contains(out.String(), tc.want) {
			t.Errorf("%v: exit %d, want %q in\n%s%s", tc.args, code, tc.want, out.String(), errOut.String())
		}
	}
}
