package nics

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeResolver answers every name with a fixed list and counts lookups.
type fakeResolver struct {
	mu    sync.Mutex
	addrs []string
	err   error
	delay time.Duration
	calls int
}

func (r *fakeResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	r.calls++
	addrs, err, delay := r.addrs, r.err, r.delay
	r.mu.Unlock()
	time.Sleep(delay) // a slow resolver injected, not a wait
	if err != nil {
		return nil, err
	}
	var out []netip.Addr
	for _, a := range addrs {
		out = append(out, netip.MustParseAddr(a))
	}
	return out, nil
}

func (r *fakeResolver) set(err error, addrs ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.addrs, r.err = addrs, err
}

func (r *fakeResolver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls
}

// listenSamePort listens on one port at every address (127.0.0.x all reach
// the loopback on Linux) and closes the listeners when the test ends.
func listenSamePort(t *testing.T, addrs ...string) ([]net.Listener, string) {
	t.Helper()
	for try := 0; try < 20; try++ {
		first, err := net.Listen("tcp", net.JoinHostPort(addrs[0], "0"))
		if err != nil {
			t.Fatalf("listen %s: %v", addrs[0], err)
		}
		_, port, _ := net.SplitHostPort(first.Addr().String())
		lns := []net.Listener{first}
		for _, a := range addrs[1:] {
			ln, err := net.Listen("tcp", net.JoinHostPort(a, port))
			if err != nil {
				break
			}
			lns = append(lns, ln)
		}
		if len(lns) == len(addrs) {
			t.Cleanup(func() {
				for _, ln := range lns {
					ln.Close()
				}
			})
			return lns, port
		}
		for _, ln := range lns {
			ln.Close()
		}
	}
	t.Fatalf("no free port shared by %v", addrs)
	return nil, ""
}

// acceptAll accepts and closes connections until the listener closes.
func acceptAll(t *testing.T, lns []net.Listener) {
	var wg sync.WaitGroup
	for _, ln := range lns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
	}
	t.Cleanup(func() {
		for _, ln := range lns {
			ln.Close()
		}
		wg.Wait()
	})
}

// dialCounts dials n times and counts the remote addresses reached.
func dialCounts(t *testing.T, d *SpreadDialer, addr string, n int) map[string]int {
	t.Helper()
	got := map[string]int{}
	for range n {
		c, err := d.DialContext(context.Background(), "tcp", addr)
		if err != nil {
			t.Fatalf("dial %s: %v", addr, err)
		}
		got[c.RemoteAddr().(*net.TCPAddr).IP.String()]++
		c.Close()
	}
	return got
}

func TestSpreadRoundRobin(t *testing.T) {
	lns, port := listenSamePort(t, "127.0.0.1", "127.0.0.2", "127.0.0.3")
	acceptAll(t, lns)
	res := &fakeResolver{addrs: []string{"127.0.0.3", "127.0.0.1", "127.0.0.2", "127.0.0.1"}}
	d := NewSpreadDialer(nil, time.Minute, res)
	got := dialCounts(t, d, "s3.test:"+port, 300)
	for _, a := range []string{"127.0.0.1", "127.0.0.2", "127.0.0.3"} {
		if got[a] != 100 {
			t.Errorf("dials to %s: got %d, want 100 (all: %v)", a, got[a], got)
		}
	}
	if res.count() != 1 {
		t.Errorf("lookups: got %d, want 1 within the refresh period", res.count())
	}
	if a := d.Addrs("s3.test"); len(a) != 3 {
		t.Errorf("Addrs: got %v, want the 3 distinct addresses", a)
	}
}

func TestSpreadHTTP(t *testing.T) {
	lns, port := listenSamePort(t, "127.0.0.1", "127.0.0.2", "127.0.0.3")
	var mu sync.Mutex
	served := map[string]int{}
	for _, ln := range lns {
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			served[r.Context().Value(http.LocalAddrContextKey).(net.Addr).(*net.TCPAddr).IP.String()]++
			mu.Unlock()
			io.WriteString(w, "ok")
		}))
		srv.Listener.Close()
		srv.Listener = ln
		srv.Start()
		t.Cleanup(srv.Close)
	}
	d := NewSpreadDialer(nil, time.Minute, &fakeResolver{addrs: []string{"127.0.0.1", "127.0.0.2", "127.0.0.3"}})
	tr := &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 64, MaxConnsPerHost: 6}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	var wg sync.WaitGroup
	var failed atomic.Int32
	for range 60 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := client.Get("http://bucket.s3.test:" + port + "/key")
			if err != nil {
				failed.Add(1)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}()
	}
	wg.Wait()
	if failed.Load() > 0 {
		t.Fatalf("%d requests failed", failed.Load())
	}
	mu.Lock()
	defer mu.Unlock()
	for _, a := range []string{"127.0.0.1", "127.0.0.2", "127.0.0.3"} {
		if served[a] == 0 {
			t.Errorf("requests served by %s: got 0, want some (all: %v)", a, served)
		}
	}
}

func TestSpreadRefresh(t *testing.T) {
	lns, port := listenSamePort(t, "127.0.0.1", "127.0.0.2", "127.0.0.3")
	acceptAll(t, lns)
	res := &fakeResolver{addrs: []string{"127.0.0.1", "127.0.0.2"}}
	d := NewSpreadDialer(nil, 30*time.Second, res)
	now := time.Unix(1000, 0)
	d.now = func() time.Time { return now }
	addr := "s3.test:" + port

	if got := dialCounts(t, d, addr, 4); got["127.0.0.1"] != 2 || got["127.0.0.2"] != 2 {
		t.Errorf("before refresh: got %v, want 2 each on .1 and .2", got)
	}
	res.set(nil, "127.0.0.3")
	now = now.Add(29 * time.Second)
	if got := dialCounts(t, d, addr, 2); got["127.0.0.3"] != 0 {
		t.Errorf("within the period: got %v, want the old answer", got)
	}
	now = now.Add(2 * time.Second)
	if got := dialCounts(t, d, addr, 3); got["127.0.0.3"] != 3 {
		t.Errorf("after the period: got %v, want all 3 on .3", got)
	}
	res.set(errors.New("servfail"))
	now = now.Add(time.Minute)
	if got := dialCounts(t, d, addr, 2); got["127.0.0.3"] != 2 {
		t.Errorf("failed refresh: got %v, want the stale answer kept", got)
	}
	if res.count() != 3 {
		t.Errorf("lookups: got %d, want 3", res.count())
	}
}

func TestSpreadSkipsRefusingAddress(t *testing.T) {
	lns, port := listenSamePort(t, "127.0.0.1", "127.0.0.2", "127.0.0.3")
	lns[2].Close() // 127.0.0.3 now refuses
	acceptAll(t, lns[:2])
	d := NewSpreadDialer(nil, time.Minute, &fakeResolver{addrs: []string{"127.0.0.1", "127.0.0.2", "127.0.0.3"}})
	got := dialCounts(t, d, "s3.test:"+port, 30)
	if got["127.0.0.1"]+got["127.0.0.2"] != 30 || got["127.0.0.3"] != 0 {
		t.Errorf("got %v, want all 30 dials on .1 and .2", got)
	}
	lns[0].Close()
	lns[1].Close()
	if _, err := d.DialContext(context.Background(), "tcp", "s3.test:"+port); err == nil || !strings.Contains(err.Error(), "3 addresses") {
		t.Errorf("all refusing: got %v, want an error naming the 3 addresses", err)
	}
}

func TestSpreadFamilies(t *testing.T) {
	lns, port := listenSamePort(t, "127.0.0.1", "127.0.0.2")
	acceptAll(t, lns)
	res := &fakeResolver{addrs: []string{"::1", "127.0.0.2"}}
	base := NewDialer(Interface{Name: "lo", IPv4: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/8")}}, DialerOptions{})
	d := NewSpreadDialer(base, time.Minute, res)
	if got := dialCounts(t, d, "s3.test:"+port, 4); got["127.0.0.2"] != 4 {
		t.Errorf("IPv4 local address: got %v, want every dial on 127.0.0.2", got)
	}
	if _, err := d.DialContext(context.Background(), "tcp6", "s3.test:"+port); err == nil || !strings.Contains(err.Error(), "none of") {
		t.Errorf("tcp6 with an IPv4 local address: got %v, want a no-usable-address error", err)
	}
	// An IP literal skips the resolver.
	res.set(errors.New("must not be asked"))
	c, err := NewSpreadDialer(nil, time.Minute, res).DialContext(context.Background(), "tcp", "127.0.0.1:"+port)
	if err != nil {
		t.Fatalf("dial IP literal: %v", err)
	}
	c.Close()
}

func TestSpreadConcurrentFirstLookup(t *testing.T) {
	lns, port := listenSamePort(t, "127.0.0.1", "127.0.0.2")
	acceptAll(t, lns)
	res := &fakeResolver{addrs: []string{"127.0.0.1", "127.0.0.2"}, delay: 50 * time.Millisecond}
	d := NewSpreadDialer(nil, time.Minute, res)
	var mu sync.Mutex
	got := map[string]int{}
	var wg sync.WaitGroup
	for range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := d.DialContext(context.Background(), "tcp", "s3.test:"+port)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			got[c.RemoteAddr().(*net.TCPAddr).IP.String()]++
			mu.Unlock()
			c.Close()
		}()
	}
	wg.Wait()
	if res.count() != 1 || got["127.0.0.1"] != 20 || got["127.0.0.2"] != 20 {
		t.Errorf("got %d lookups and %v, want 1 lookup and 20 dials each", res.count(), got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := NewSpreadDialer(nil, time.Minute, res).DialContext(ctx, "tcp", fmt.Sprintf("s3.test:%s", port)); err == nil {
		t.Errorf("canceled context: got no error")
	}
}
