package fleet_test

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/s3pd/s3pd/pkg/fleet"
)

// TestStartWaitsForItsOwnName: a node whose own name does not resolve
// yet (a pod's name in its Service, just after it started) binds once
// it does, and serves there.
func TestStartWaitsForItsOwnName(t *testing.T) {
	s, err := fleet.NewServer(fleet.ServerOptions{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	tries := 0
	fleet.SetListen(s, func(network, addr string) (net.Listener, error) {
		tries++
		if addr != "node-0.fleet:0" {
			t.Errorf("bind %q, want the node's own address", addr)
		}
		if tries < 3 {
			return nil, &net.OpError{Op: "listen", Net: network, Err: &net.DNSError{Err: "no such host", Name: "node-0.fleet", IsNotFound: true}}
		}
		return net.Listen(network, "127.0.0.1:0")
	})
	addr, err := s.StartWithin(context.Background(), "node-0.fleet:0", time.Minute)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	defer s.Close()
	if tries != 3 {
		t.Errorf("%d binds, want 3: two before the name resolved, one after", tries)
	}
	resp, err := http.Get("http://" + addr + fleet.ObjectPath + "?key=x")
	if err != nil {
		t.Fatalf("the server does not answer at %s: %v", addr, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a request without the token: %s, want 403", resp.Status)
	}
}

// TestStartGivesUpOnAnAddressNotOurs: an address that never becomes one
// of this host's is tried for the wait given, then refused with one line
// that says so; other errors (a port taken) are refused at once.
func TestStartGivesUpOnAnAddressNotOurs(t *testing.T) {
	s, err := fleet.NewServer(fleet.ServerOptions{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	const wait = 600 * time.Millisecond
	start := time.Now()
	_, err = s.StartWithin(context.Background(), "198.18.0.1:7373", wait) // of no interface here
	took := time.Since(start)
	if err == nil {
		s.Close()
		t.Fatal("bound 198.18.0.1, an address of no interface of this host")
	}
	if msg := err.Error(); !strings.Contains(msg, "not an address of this host after 600ms") || strings.Contains(msg, "\n") {
		t.Errorf("error %q, want one line saying the address is not this host's after the wait", msg)
	}
	if took < wait/2 {
		t.Errorf("gave up after %v, want it to try for about %v", took, wait)
	}

	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	start = time.Now()
	if _, err := s.StartWithin(context.Background(), taken.Addr().String(), time.Minute); err == nil || strings.Contains(err.Error(), "not an address of this host") {
		t.Errorf("bind a port taken: %v, want the bind's own error", err)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("a port taken was tried again for %v, want it refused at once", took)
	}
}
