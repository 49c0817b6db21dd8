package cmd

import (
	"encoding/xml"
	"io"
	"net/http"
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
