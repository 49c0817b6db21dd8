//go:build netns

package netnstest

import (
	"context"
	"crypto/rand"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/s3pd/s3pd/pkg/s3emu"
)

// countingEmulator serves the emulator (bucket "upl" in memory) on the
// server's first service address and counts requests by the client
// address they came from: one per link.
type countingEmulator struct {
	endpoint string
	srv      *s3emu.Server
	mu       sync.Mutex
	from     map[string]int
}

// awaitCount waits up to d for n requests from addr, woken by the
// emulator at each request (s3emu.Server.Await), and reports whether
// they came.
func (c *countingEmulator) awaitCount(addr string, n int, d time.Duration) bool {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	_, err := c.srv.Await(ctx, func(s3emu.Stats) bool { return c.count(addr) >= n })
	return err == nil
}

func (c *countingEmulator) count(addr string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.from[addr]
}

func (c *countingEmulator) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.from {
		n += v
	}
	return n
}

func startCountingEmulator(t *testing.T, e *Env) *countingEmulator {
	t.Helper()
	srv := s3emu.NewTestServer(t, s3emu.Options{Buckets: []string{"upl"}, AllowRemote: true}, s3emu.Unstarted())
	c := &countingEmulator{srv: srv.Server, from: map[string]int{}}
	const port = "8080"
	ln, err := e.Listen(e.Server, "tcp4", net.JoinHostPort(e.Service[0].String(), port))
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{ReadHeaderTimeout: time.Minute, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		c.mu.Lock()
		c.from[host]++
		c.mu.Unlock()
		srv.Handler().ServeHTTP(w, r)
	})}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	c.endpoint = "http://" + net.JoinHostPort(e.Service[0].String(), port)
	return c
}

// TestCopyOverNICs: copy binds to the cards of --nics as get does.
// Uploads and server-side copies take their parts over every card in
// turn; a card that cannot reach the endpoint is dropped with one warning
// when another can, and stops the run (exit 2, the card named, nothing
// sent) when none can, in seconds rather than ten 10 s dials; an unknown
// card is refused before anything is sent.
func TestCopyOverNICs(t *testing.T) {
	e := New(t, Config{Links: []Link{{}, {}, {}}})
	bin := buildS3pd(t)
	emu := startCountingEmulator(t, e)
	src := t.TempDir()
	for _, name := range []string{"a", "b"} {
		data := make([]byte, 12<<20)
		rand.Read(data)
		if err := os.WriteFile(filepath.Join(src, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	nic0, nic1, nic2 := e.Links[0], e.Links[1], e.Links[2]
	copyCmd := func(nicList string, args ...string) (string, int, time.Duration) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		full := append([]string{"copy", "--quiet", "--nics", nicList, "--endpoint-url", emu.endpoint, "--no-sign-request",
			"--region", "us-east-1", "--partsize", "2MiB", "--max-concurrent-requests", "4"}, args...)
		start := time.Now()
		out, err := e.Command(ctx, e.Client, bin, full...).CombinedOutput()
		code := 0
		if ee, ok := err.(interface{ ExitCode() int }); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("s3pd copy: %v\n%s", err, out)
		}
		return string(out), code, time.Since(start)
	}
	spread := func(t *testing.T, what string, before map[string]int, links ...LinkInfo) {
		t.Helper()
		total := 0
		got := map[string]int{}
		for _, l := range links {
			got[l.ClientIf] = emu.count(l.ClientAddr.String()) - before[l.ClientIf]
			total += got[l.ClientIf]
		}
		for _, l := range links {
			// Round-robin per request: each card carries about its share.
			if share := float64(got[l.ClientIf]) / float64(total); share < 0.8/float64(len(links)) {
				t.Errorf("%s: %s carried %d of %d requests (%v), want about 1/%d", what, l.ClientIf, got[l.ClientIf], total, got, len(links))
			}
		}
	}
	snapshot := func(links ...LinkInfo) map[string]int {
		m := map[string]int{}
		for _, l := range links {
			m[l.ClientIf] = emu.count(l.ClientAddr.String())
		}
		return m
	}

	t.Run("upload parts over every card", func(t *testing.T) {
		before := snapshot(nic0, nic1)
		if out, code, _ := copyCmd(nic0.ClientIf+","+nic1.ClientIf, src+"/", "s3://upl/a/"); code != 0 {
			t.Fatalf("exit %d\n%s", code, out)
		}
		spread(t, "upload", before, nic0, nic1)
		t.Logf("requests by card: %v", map[string]int{"nic0": emu.count(nic0.ClientAddr.String()) - before["nic0"], "nic1": emu.count(nic1.ClientAddr.String()) - before["nic1"]})
	})
	t.Run("server-side copy parts over every card", func(t *testing.T) {
		before := snapshot(nic0, nic1)
		if out, code, _ := copyCmd(nic0.ClientIf+","+nic1.ClientIf, "--copy-threshold", "1MiB", "s3://upl/a/", "s3://upl/b/"); code != 0 {
			t.Fatalf("exit %d\n%s", code, out)
		}
		spread(t, "server-side copy", before, nic0, nic1)
	})

	// nic2's peer loses its address: the client's SYNs through nic2 find
	// no gateway.
	e.ip(e.Server, "addr", "del", nic2.ServerAddr.String()+"/24", "dev", nic2.ServerIf)
	t.Run("a card that cannot reach the endpoint is dropped", func(t *testing.T) {
		before := snapshot(nic0)
		out, code, took := copyCmd(nic0.ClientIf+","+nic2.ClientIf, src+"/", "s3://upl/c/")
		if code != 0 {
			t.Fatalf("exit %d\n%s", code, out)
		}
		if n := strings.Count(out, "cannot reach the endpoint"); n != 1 || !strings.Contains(out, nic2.ClientIf) {
			t.Errorf("want one warning naming %s, got:\n%s", nic2.ClientIf, out)
		}
		if emu.count(nic0.ClientAddr.String()) == before[nic0.ClientIf] {
			t.Errorf("nothing went over %s", nic0.ClientIf)
		}
		if took > 30*time.Second {
			t.Errorf("the run took %v: the dead card was waited on", took)
		}
	})
	t.Run("no card reaches the endpoint: exit 2 before anything is sent", func(t *testing.T) {
		before := emu.total()
		out, code, took := copyCmd(nic2.ClientIf, src+"/", "s3://upl/d/")
		if code != 2 || !strings.Contains(out, nic2.ClientIf) || !strings.Contains(out, "no card reaches") {
			t.Errorf("exit %d, want 2 naming %s:\n%s", code, nic2.ClientIf, out)
		}
		if took > 20*time.Second {
			t.Errorf("refused after %v, want seconds", took)
		}
		if n := emu.total() - before; n != 0 {
			t.Errorf("%d requests reached the server", n)
		}
	})
	t.Run("an unknown card is refused", func(t *testing.T) {
		before := emu.total()
		out, code, _ := copyCmd("doesnotexist0", src+"/", "s3://upl/e/")
		if code != 2 || !strings.Contains(out, "doesnotexist0") {
			t.Errorf("exit %d, want 2 naming doesnotexist0:\n%s", code, out)
		}
		if n := emu.total() - before; n != 0 {
			t.Errorf("%d requests reached the server", n)
		}
	})
}
