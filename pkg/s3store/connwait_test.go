package s3store

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestConnWaitCountsOnlyNewConnections: the first request of a client
// dials, and its wait for the connection is counted; the second reuses
// the kept-alive connection and counts none.
func TestConnWaitCountsOnlyNewConnections(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer srv.Close()
	client := srv.Client()
	for i, wantNew := range []bool{true, false} {
		ctx, c := withConnWait(context.Background())
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if got := c.wait > 0; got != wantNew {
			t.Errorf("request %d: waited %v for its connection; want a wait counted: %v", i+1, c.wait, wantNew)
		}
	}
}
