package s3emu

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"
)

// TestAwaitWakesAtEachChange: Await returns once the requests it waits
// for are served, with the counts that satisfied it, and gives up with
// ctx's error when they never come.
func TestAwaitWakesAtEachChange(t *testing.T) {
	srv, url := start(t, Options{Dataset: "a:3:1KiB"})
	got := make(chan Stats, 1)
	ready := make(chan struct{})
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		close(ready)
		st, _ := srv.Await(ctx, func(s Stats) bool { return s.GetRequests == 3 && s.InFlight == 0 })
		got <- st
	}()
	<-ready
	for _, key := range []string{"00000000", "00000001", "00000002"} {
		resp, err := http.Get(url + "/bench/a/" + key)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if st := <-got; st.GetRequests != 3 || st.InFlight != 0 || st.BytesSent < 3<<10 {
		t.Errorf("Await returned %+v, want 3 GETs done and their 3 KiB sent", st)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := srv.Await(ctx, func(s Stats) bool { return s.GetRequests > 3 }); !errors.Is(err, context.Canceled) {
		t.Errorf("Await of what never comes: %v, want context.Canceled", err)
	}
}
