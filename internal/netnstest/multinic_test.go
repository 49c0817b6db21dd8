//go:build netns

// The multi-NIC integration test of issue 4. It runs the built s3pd binary
// inside the client namespace against the emulator in the server namespace,
// so it needs `s3pd get --nics` and `s3pd nics` registered; until they are,
// it stays behind the netns build tag: go test -tags netns ./internal/netnstest/

package netnstest

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/netip"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/s3pd/s3pd/pkg/nics"
	"github.com/s3pd/s3pd/pkg/s3emu"
)

// buildS3pd builds the s3pd binary into a temporary directory.
func buildS3pd(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "s3pd")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/s3pd/s3pd").CombinedOutput()
	if err != nil {
		t.Fatalf("build s3pd: %v\n%s", err, out)
	}
	return bin
}

// startEmulator serves the synthetic emulator inside the server namespace.
func startEmulator(t *testing.T, e *Env, addr, dataset string) *s3emu.Server {
	t.Helper()
	// Prepared: ETags and checksums are computed now, not while the
	// transfer is timed. AllowRemote: it listens on a namespace's address,
	// which the other namespaces reach by that address or a name. Start listens on the calling thread, so the
	// socket lives in e.Server.
	return s3emu.NewTestServer(t, s3emu.Options{Dataset: dataset, AllowRemote: true}, s3emu.Prepared(),
		s3emu.ListenWithin(addr, func(start func() error) error { return e.Do(e.Server, start) })).Server
}

// TestMultiNICGet downloads over three capped links at once: 1 Gbit/s,
// 1 Gbit/s and 300 Mbit/s. Balancing by outstanding bytes must reach 0.85x
// the sum of the caps (blind round-robin would be held to three times the
// slowest) and give each link a share of the bytes within 10 points of its
// cap's share. The aggregate is a throughput on a shared machine: a run
// that misses it is tried once more (a pause of the machine costs a 4 s
// run its bound), and the best of the two must reach it; the shares must
// hold in every run.
func TestMultiNICGet(t *testing.T) {
	e := New(t, Config{Links: []Link{{RateMbit: 1000}, {RateMbit: 1000}, {RateMbit: 300}}})
	bin := buildS3pd(t)
	const port = "8080"
	startEmulator(t, e, net.JoinHostPort(e.Service[0].String(), port), "model:24:48MiB")
	sumCaps := 0
	for _, l := range e.Links {
		sumCaps += l.RateMbit
	}
	want := 0.85 * float64(sumCaps)
	best := 0.0
	for try := 1; try <= 2 && best < want; try++ {
		best = max(best, multiNICRun(t, e, bin, port, sumCaps))
	}
	if best < want {
		t.Errorf("aggregate: got at best %.0f Mbit/s in two runs, want at least %.0f (0.85x the caps)", best, want)
	}
}

// multiNICRun runs one download of TestMultiNICGet, checks each link's
// share of the bytes and the summary's per-NIC figures, and returns the
// aggregate rate in Mbit/s.
func multiNICRun(t *testing.T, e *Env, bin, port string, sumCaps int) float64 {
	t.Helper()
	var names []string
	for _, l := range e.Links {
		names = append(names, l.ClientIf)
	}
	before := rxAll(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := e.Command(ctx, e.Client, bin, "get", "--benchmark", "--json",
		"--nics", strings.Join(names, ","), "--partsize", "1MiB",
		"--endpoint-url", "http://"+net.JoinHostPort(e.Service[0].String(), port),
		"--no-sign-request", "s3://bench/model/")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	out, err := cmd.Output()
	wall := time.Since(start)
	if err != nil {
		t.Fatalf("s3pd get: %v\nstdout: %s\nstderr: %s", err, out, stderr.String())
	}
	after := rxAll(t, e)

	var total uint64
	rx := make([]uint64, len(e.Links))
	for i := range e.Links {
		rx[i] = after[i] - before[i]
		total += rx[i]
	}
	aggMbit := float64(total) * 8 / wall.Seconds() / 1e6
	t.Logf("aggregate %.0f Mbit/s over %v (caps sum %d Mbit/s); summary: %s", aggMbit, wall, sumCaps, lastLine(out))
	for i, l := range e.Links {
		share := float64(rx[i]) / float64(total)
		want := float64(l.RateMbit) / float64(sumCaps)
		t.Logf("%s: %d bytes, share %.3f, cap share %.3f", l.ClientIf, rx[i], share, want)
		if share < want-0.10 || share > want+0.10 {
			t.Errorf("%s: got share %.3f, want within 0.10 of %.3f", l.ClientIf, share, want)
		}
	}
	// The JSON summary reports bytes per NIC.
	if !bytes.Contains(out, []byte(`"nics"`)) {
		t.Errorf("summary lacks per-NIC bytes: %s", out)
	}
	return aggMbit
}

// TestNicsCommandFlagsMissingRule runs `s3pd nics --json` in a client
// namespace where nic1 has no policy rule.
func TestNicsCommandFlagsMissingRule(t *testing.T) {
	e := New(t, Config{Links: []Link{{}, {NoPolicy: true}}})
	bin := buildS3pd(t)
	out, err := e.Command(context.Background(), e.Client, bin, "nics", "--json").Output()
	if err != nil {
		t.Fatalf("s3pd nics: %v: %s", err, out)
	}
	var rep nics.Report
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("decode %s: %v", out, err)
	}
	found := false
	for _, w := range rep.Warnings {
		found = found || (w.Interface == "nic1" && strings.Contains(w.Message, "no policy rule"))
	}
	if !found || rep.NICs != "nic0" {
		t.Errorf("got nics %q and warnings %+v, want nic0 and a policy warning for nic1", rep.NICs, rep.Warnings)
	}
	// Run through ip netns exec, sysfs is the namespace's: veths report
	// 10000 Mb/s (and have no device/driver link).
	for _, i := range rep.Interfaces {
		if strings.HasPrefix(i.Name, "nic") && i.SpeedMbps != 10000 {
			t.Errorf("%s: got speed %d Mb/s, want the veth's 10000", i.Name, i.SpeedMbps)
		}
	}
}

// TestGetSpreadsOverEndpointAddresses maps one endpoint name to three
// emulator addresses in the client's /etc/hosts and checks that every
// address carried requests.
func TestGetSpreadsOverEndpointAddresses(t *testing.T) {
	e := New(t, Config{Links: []Link{{}}, ServiceAddrs: 3,
		Hosts: map[string][]netip.Addr{"s3.netnstest": {
			netip.MustParseAddr("198.19.0.1"), netip.MustParseAddr("198.19.0.2"), netip.MustParseAddr("198.19.0.3")}}})
	bin := buildS3pd(t)
	srv := s3emu.NewTestServer(t, s3emu.Options{Dataset: "small:64:4MiB", AllowRemote: true}, s3emu.Unstarted())
	var mu sync.Mutex
	served := map[string]int{}
	counting := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		la := r.Context().Value(http.LocalAddrContextKey).(net.Addr).(*net.TCPAddr)
		mu.Lock()
		served[la.IP.String()]++
		mu.Unlock()
		srv.Handler().ServeHTTP(w, r)
	})
	const port = "8080"
	for _, a := range e.Service {
		ln, err := e.Listen(e.Server, "tcp4", net.JoinHostPort(a.String(), port))
		if err != nil {
			t.Fatal(err)
		}
		hs := &http.Server{Handler: counting, ReadHeaderTimeout: time.Minute}
		go hs.Serve(ln)
		t.Cleanup(func() { hs.Close() })
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := e.Command(ctx, e.Client, bin, "get", "--benchmark", "--nics", e.Links[0].ClientIf,
		"--endpoint-url", "http://s3.netnstest:"+port, "--no-sign-request", "s3://bench/small/").CombinedOutput()
	if err != nil {
		t.Fatalf("s3pd get: %v\n%s", err, out)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, a := range e.Service {
		if served[a.String()] == 0 {
			t.Errorf("requests to %s: got 0, want some (all: %v)", a, served)
		}
	}
}

func rxAll(t *testing.T, e *Env) []uint64 {
	t.Helper()
	out := make([]uint64, len(e.Links))
	for i, l := range e.Links {
		n, err := e.RxBytes(e.Client, l.ClientIf)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = n
	}
	return out
}

// lastLine is the last line of out (the JSON summary).
func lastLine(out []byte) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}
