package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/s3pd/s3pd/pkg/s3emu"
)

// soakNestedDir is where a nested round's second DEST is, inside the
// first: checkFinalNames leaves it to its own run.
const soakNestedDir = "nested"

// soakStdoutRound streams one object of a random dataset to stdout
// (get KEY - or cat) under --verify full, with random faults, sometimes
// from a server that keeps no checksum but the ETag (the MD5 is then
// all there is to check, summed as the bytes go out). Exit 0 must mean
// stdout holds the object, byte for byte; exit 1 must come with an
// error line.
func soakStdoutRound(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	spec, objs := soakDataset(rng)
	rules := soakFaults(rng, objs)
	noSums := rng.IntN(2) == 0
	o := objs[rng.IntN(len(objs))]
	endpoint := s3emu.NewTestServer(t, s3emu.Options{Dataset: spec, Faults: s3emu.NewFaults(rules...), NoChecksums: noSums}).URL
	sub := []string{"get", "cat"}[rng.IntN(2)]
	args := []string{sub, "--endpoint-url", endpoint, "--region", "us-east-1", "--no-sign-request", "--quiet", "--verify", "full",
		"--partsize", []string{"64KiB", "256KiB", "1MiB"}[rng.IntN(3)], "--threads", fmt.Sprint(1 + rng.IntN(4))}
	args = append(args, soakThreshold(rng)...)
	if sub == "get" {
		args = append(args, "--stall-timeout", "1s", "s3://"+s3emu.DefaultBucket+"/"+o.key, "-")
	} else {
		args = append(args, "s3://"+s3emu.DefaultBucket+"/"+o.key)
	}
	t.Logf("seed %d: %s, %d faults, no checksums %v: %s", seed, spec, len(rules), noSums, strings.Join(args[7:], " "))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = baseEnv(t)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	code := exitCode(t, cmd.Run())
	want := make([]byte, o.size)
	s3emu.SyntheticBytes(o.key, 0, want)
	switch code {
	case 0:
		if !bytes.Equal(stdout.Bytes(), want) {
			t.Errorf("seed %d: WRONG BYTES on stdout with exit 0 (%d bytes, want %d)", seed, stdout.Len(), len(want))
		}
	case 1:
		if !strings.Contains(stderr.String(), "s3pd: ") {
			t.Errorf("seed %d: exit 1 with no error line\nstderr: %s", seed, stderr.String())
		}
	default:
		t.Errorf("seed %d: exit %d\nstderr: %s", seed, code, stderr.String())
	}
}

// soakRedirectRound runs a signed get through a server that answers the
// first GET of some keys with a 307 or 308 to another host. Nothing may
// reach that host that belongs to the S3 server: no signature, no
// X-Amz-* header, no body. The other host answers 503, so a client that
// follows the redirect retries against the S3 server; the run's exit
// must still match its disk.
func soakRedirectRound(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	spec, objs := soakDataset(rng)
	rules := soakFaults(rng, objs)
	target, _ := url.Parse(s3emu.NewTestServer(t, s3emu.Options{Dataset: spec, MaxKeys: 1 + rng.IntN(4), Faults: s3emu.NewFaults(rules...)}).URL)
	var mu sync.Mutex
	var leaks []string
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		var sent []string
		for h := range r.Header {
			if strings.EqualFold(h, "Authorization") || strings.HasPrefix(strings.ToLower(h), "x-amz-") {
				sent = append(sent, h)
			}
		}
		if len(sent) > 0 || n > 0 {
			mu.Lock()
			leaks = append(leaks, fmt.Sprintf("%s %s: headers %v, %d body bytes", r.Method, r.URL.Path, sent, n))
			mu.Unlock()
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(elsewhere.Close)
	salt := rng.Uint64()
	redirected := map[string]bool{}
	proxy := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := fnv.New64a()
		fmt.Fprint(h, salt, r.URL.Path)
		mu.Lock()
		first := !redirected[r.URL.Path]
		redirected[r.URL.Path] = true
		mu.Unlock()
		if r.Method == http.MethodGet && r.URL.RawQuery == "" && first && h.Sum64()%2 == 0 {
			status := []int{http.StatusTemporaryRedirect, http.StatusPermanentRedirect}[h.Sum64()/2%2]
			http.Redirect(w, r, elsewhere.URL+r.URL.RequestURI(), status)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	t.Logf("seed %d: dataset %s, %d faults, redirecting to %s", seed, spec, len(rules), elsewhere.URL)
	args := soakArgs(rng, front.URL)
	for i, a := range args {
		if a == "--no-sign-request" {
			args = append(args[:i:i], args[i+1:]...) // signed: there is a signature to leak
			break
		}
	}
	dest := t.TempDir()
	code, lines, stderr := soakGet(t, withDest(args, dest))
	checkFinalNames(t, seed, dest, objs, lines)
	checkExit(t, seed, 0, code, lines, dest, objs, stderr)
	mu.Lock()
	defer mu.Unlock()
	for _, l := range leaks {
		t.Errorf("seed %d: sent to the host a redirect named: %s", seed, l)
	}
}

// soakNestedRound runs get --delete over DEST while another get, maybe
// SIGKILLed part way, runs into DEST/nested. --delete may remove the
// nested run's finished files (the listing of DEST lacks them) but never
// its work folder: the nested run fails no object for a lost partial
// file or lock, and its rerun (the same command) ends with its exit
// matching its disk.
func soakNestedRound(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	spec, objs := soakDataset(rng)
	rules := soakFaults(rng, objs)
	endpoint := s3emu.NewTestServer(t, s3emu.Options{Dataset: spec, MaxKeys: 1 + rng.IntN(4), Faults: s3emu.NewFaults(rules...)}).URL
	args := soakArgs(rng, endpoint)
	parent := t.TempDir()
	nested := filepath.Join(parent, soakNestedDir)
	kill := rng.IntN(2) == 0
	delay := time.Duration(20+rng.IntN(600)) * time.Millisecond
	start := time.Duration(rng.IntN(300)) * time.Millisecond
	t.Logf("seed %d: dataset %s, %d faults, nested run killed %v after %s, parent --delete after %s", seed, spec, len(rules), kill, delay, start)
	var wg sync.WaitGroup
	wg.Add(1)
	var nestedLines []map[string]any
	go func() {
		defer wg.Done()
		if kill {
			soakKill(t, withDest(args, nested), delay)
			return
		}
		_, nestedLines, _ = soakGet(t, withDest(args, nested))
	}()
	time.Sleep(start) // the parent's start after the nested run's: the fault's timing
	code, lines, stderr := soakGet(t, withDest(args, parent, "--delete"))
	wg.Wait()
	checkFinalNames(t, seed, parent, objs, lines)
	checkExit(t, seed, 0, code, lines, parent, objs, stderr)
	for _, l := range lines {
		if l["type"] == "delete" && strings.Contains(fmt.Sprint(l["name"]), ".s3pd") {
			t.Errorf("seed %d: --delete removed %v, inside a work folder", seed, l["name"])
		}
	}
	for _, l := range nestedLines {
		if l["type"] == "object" && l["status"] == "failed" && strings.Contains(fmt.Sprint(l["error"]), "no such file") {
			t.Errorf("seed %d: the nested run lost a file of its own: %v", seed, l["error"])
		}
	}
	code, lines, stderr = soakGet(t, withDest(args, nested))
	checkFinalNames(t, seed, nested, objs, lines)
	checkExit(t, seed, 1, code, lines, nested, objs, stderr)
}

// exitCode is the exit status a finished command's Run returned.
func exitCode(t *testing.T, err error) int {
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return ee.ExitCode()
	case err != nil:
		t.Errorf("run: %v", err)
	}
	return 0
}
