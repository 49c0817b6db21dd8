package s3store

import (
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3pd/s3pd/pkg/s3emu"
)

// The client-side count agrees with the server's: a client over a
// Transport whose lanes a counter wraps counts one handshake per
// connection it opens, once (the SDK's client and the lane share one
// round tripper), and the connection opened after the idle ones close
// resumes from the transport's session cache, as the server counts.
func TestHandshakesCountedAsTheServerCounts(t *testing.T) {
	ts := s3emu.NewTLSTestServer(t, s3emu.Options{Dataset: "h:8:64KiB"})
	h := &Handshakes{}
	tr, err := NewTransport(TransportOptions{CABundle: ts.CAFile,
		Wrap: func(_ string, rt http.RoundTripper) http.RoundTripper { return h.RoundTripper(rt) }})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	c, err := NewClient(context.Background(), s3emu.DefaultBucket, ClientOptions{Region: "us-east-1", EndpointURL: ts.URL,
		NoSignRequest: true, Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	get := func(key string) {
		t.Helper()
		out, err := c.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(s3emu.DefaultBucket), Key: aws.String(key)})
		if err != nil {
			t.Fatalf("GetObject %s over TLS: %v", key, err)
		}
		io.Copy(io.Discard, out.Body)
		out.Body.Close()
	}
	for _, key := range []string{"h/00000000", "h/00000001", "h/00000002"} {
		get(key)
	}
	got, srv := h.Counts(), ts.Stats()
	if got.Total != srv.TLSHandshakes || got.Total < 1 || got.Resumed != 0 || got.Failed != 0 || got.Time <= 0 {
		t.Errorf("SDK client counted %+v, the server %d handshakes; want the same count, none resumed, a positive time", got, srv.TLSHandshakes)
	}

	before := h.Counts()
	for range 2 {
		tr.CloseIdle()
		get("h/00000003")
	}
	if d, srv := h.Counts().Sub(before), ts.Stats(); d.Total != 2 || d.Resumed != 2 || srv.TLSResumed != 2 {
		t.Errorf("two new connections over the transport's session cache: %+v (server: %d resumed), want 2 handshakes, both resumed", d, srv.TLSResumed)
	}

	before = h.Counts()
	untrusting := &http.Client{Transport: h.RoundTripper(&http.Transport{})}
	if resp, err := untrusting.Get(ts.URL + "/"); err == nil {
		resp.Body.Close()
		t.Fatal("a client without the CA got an answer")
	}
	if d := h.Counts().Sub(before); d.Total != 0 || d.Failed != 1 {
		t.Errorf("an untrusted certificate: %+v, want 1 failed and none counted", d)
	}
	var none *Handshakes
	if none.Counts() != (HandshakeCounts{}) {
		t.Error("a nil counter counted")
	}
}
