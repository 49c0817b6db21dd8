package s3emu

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestTestServerOptions starts the emulator each way NewTestServer
// offers and fetches an object through each.
func TestTestServerOptions(t *testing.T) {
	get := func(t *testing.T, url string) {
		t.Helper()
		resp, body := raw(t, http.MethodGet, url+"/"+DefaultBucket+"/s/00000000", nil, nil)
		if resp.StatusCode != http.StatusOK || len(body) != 100 {
			t.Fatalf("GET: %d with %d bytes, want 200 with 100", resp.StatusCode, len(body))
		}
	}
	opts := Options{Dataset: "s:2:100"}
	t.Run("default", func(t *testing.T) {
		get(t, NewTestServer(t, opts).URL)
	})
	t.Run("prepared, listening within", func(t *testing.T) {
		calls := 0
		ts := NewTestServer(t, opts, Prepared(), ListenWithin("127.0.0.1:0", func(start func() error) error {
			calls++
			return start()
		}))
		if calls != 1 || ts.URL == "" {
			t.Fatalf("within called %d times, URL %q; want once and an endpoint", calls, ts.URL)
		}
		get(t, ts.URL)
	})
	t.Run("unstarted", func(t *testing.T) {
		ts := NewTestServer(t, opts, Unstarted())
		if ts.URL != "" {
			t.Fatalf("URL %q, want none", ts.URL)
		}
		hs := httptest.NewServer(ts.Handler())
		defer hs.Close()
		get(t, hs.URL)
	})
}

func TestServeUntilTheContextEnds(t *testing.T) {
	srv, err := New(Options{Dataset: "s:2:100"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, srv, "127.0.0.1:0", func(ep string) { ready <- ep }) }()
	var ep string
	select {
	case ep = <-ready:
	case err := <-done:
		t.Fatalf("Serve ended before it was ready: %v", err)
	}
	resp, _ := raw(t, http.MethodGet, ep+"/"+DefaultBucket+"/s/00000001", nil, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET: %d, want 200", resp.StatusCode)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Serve did not end with its context")
	}
	if resp, err := http.Get(ep); err == nil {
		resp.Body.Close()
		t.Errorf("the server still answers after Serve returned")
	}
}
