package fleet_test

import (
	"context"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/s3pd/s3pd/pkg/fleet"
)

// startServers starts n servers on 127.0.0.1 and returns them with
// their addresses.
func startServers(t *testing.T, n int) ([]*fleet.Server, []string) {
	t.Helper()
	var servers []*fleet.Server
	var addrs []string
	for range n {
		// A request for what is not held waits briefly: the tests
		// that want a 404 get it soon.
		s, err := fleet.NewServer(fleet.ServerOptions{Token: token, Wait: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		addr, err := s.Start("127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		servers, addrs = append(servers, s), append(addrs, addr)
	}
	return servers, addrs
}

// Every node lingers until the others said done: they all return, each
// having heard of every other, well before Max.
func TestLingerEndsWhenEveryPeerIsDone(t *testing.T) {
	servers, addrs := startServers(t, 3)
	var wg sync.WaitGroup
	missing := make([][]int, 3)
	start := time.Now()
	for k, s := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(k) * 100 * time.Millisecond) // they finish one after another
			missing[k] = s.Linger(context.Background(), fleet.LingerOptions{Self: k, Peers: addrs, Token: token, Max: time.Minute})
		}()
	}
	wg.Wait()
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("lingering took %v: the nodes did not hear of each other", took)
	}
	for k, m := range missing {
		if len(m) != 0 {
			t.Errorf("node %d: peers %v did not say done", k, m)
		}
		done := servers[k].Done()
		for i := range 3 {
			if want := i != k; done[strconv.Itoa(i)] != want {
				t.Errorf("node %d: done from node %d is %v, want %v", k, i, done[strconv.Itoa(i)], want)
			}
		}
	}
}

// A peer that is not up when a node finishes is told again until it is,
// so that it does not wait for that node in turn; one that never comes
// is named when Max runs out.
func TestLingerTellsAPeerThatStartsLate(t *testing.T) {
	servers, addrs := startServers(t, 2)
	late := freeAddr(t)
	peers := []string{addrs[0], addrs[1], late}
	var wg sync.WaitGroup
	missing := make([][]int, 2)
	for k := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			missing[k] = servers[k].Linger(context.Background(), fleet.LingerOptions{Self: k, Peers: peers, Token: token,
				Max: 3 * time.Second, Retry: 50 * time.Millisecond})
		}()
	}
	time.Sleep(500 * time.Millisecond)
	s, err := fleet.NewServer(fleet.ServerOptions{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Start(late); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !s.WaitDone(ctxTimeout(t, 10*time.Second), []string{"0", "1"}) {
		t.Fatalf("the late node heard done from %v, want nodes 0 and 1", s.Done())
	}
	wg.Wait()
	for k, m := range missing {
		if !slices.Equal(m, []int{2}) {
			t.Errorf("node %d: missing %v, want [2] (the late node never said done)", k, m)
		}
	}
}

// A done without the token is refused with 403 and no body, and not
// counted.
func TestDoneWithoutTokenIsRefused(t *testing.T) {
	servers, addrs := startServers(t, 1)
	req, _ := http.NewRequest(http.MethodPost, "http://"+addrs[0]+fleet.DonePath, strings.NewReader(""))
	req.Header.Set(fleet.NodeHeader, "1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || resp.ContentLength > 0 {
		t.Errorf("done without token: %s, %d bytes; want 403 with no body", resp.Status, resp.ContentLength)
	}
	if d := servers[0].Done(); len(d) != 0 {
		t.Errorf("done without token counted: %v", d)
	}
}

func ctxTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// freeAddr is an address of 127.0.0.1 with a port free just now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
