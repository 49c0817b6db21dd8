package s3store

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3pd/s3pd/pkg/s3emu"
)

// The client-side count agrees with the server's: a client built by
// NewClient with a CA bundle and a counter counts one handshake per
// connection it opens, and a decorated transport with a session cache
// counts its resumption as the server does.
func TestHandshakesCountedAsTheServerCounts(t *testing.T) {
	ts := s3emu.NewTLSTestServer(t, s3emu.Options{Dataset: "h:8:64KiB"})
	h := &Handshakes{}
	c, err := NewClient(context.Background(), s3emu.DefaultBucket, ClientOptions{Region: "us-east-1", EndpointURL: ts.URL,
		NoSignRequest: true, TLS: TLS{CABundle: ts.CAFile}, Handshakes: h})
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"h/00000000", "h/00000001", "h/00000002"} {
		out, err := c.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(s3emu.DefaultBucket), Key: aws.String(key)})
		if err != nil {
			t.Fatalf("GetObject %s over TLS: %v", key, err)
		}
		io.Copy(io.Discard, out.Body)
		out.Body.Close()
	}
	got, srv := h.Counts(), ts.Stats()
	if got.Total != srv.TLSHandshakes || got.Total < 1 || got.Resumed != 0 || got.Failed != 0 || got.Time <= 0 {
		t.Errorf("SDK client counted %+v, the server %d handshakes; want the same count, none resumed, a positive time", got, srv.TLSHandshakes)
	}

	before := h.Counts()
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ts.CertPool(), ClientSessionCache: tls.NewLRUClientSessionCache(4)}}
	hc := &http.Client{Transport: h.RoundTripper(tr)}
	for range 2 {
		resp, err := hc.Get(ts.URL + "/" + s3emu.DefaultBucket + "/h/00000003")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		tr.CloseIdleConnections()
	}
	if d := h.Counts().Sub(before); d.Total != 2 || d.Resumed != 1 {
		t.Errorf("two connections with a session cache: %+v, want 2 handshakes, 1 resumed", d)
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
