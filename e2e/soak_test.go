package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/s3pd/s3pd/pkg/s3emu"
)

// TestSoak runs random rounds until its time is up: each round serves a
// random dataset with random faults (errors, resets, short and oddly
// framed bodies, stalls, flipped bytes, hostile listing pages) and is
// one of four kinds (soakKinds): two gets at once into distinct DESTs,
// some SIGKILLed part way and run again (resume) with another multipart
// threshold; one object to stdout under --verify full; a get through a
// server that redirects some GETs to another host; a get --delete over
// a DEST while a nested get runs into DEST/sub. It checks that no final
// name (or stdout, with exit 0) ever holds a wrong byte, that every exit
// code matches the disk, that a run that exits 0 leaves no work folder,
// that nothing is sent to a host a redirect names, and that --delete
// never touches the nested run's work folder. It runs for S3PD_SOAK (a
// Go duration; 20s by default, `make soak SOAK=30m` for longer), from
// seed S3PD_SOAK_SEED (default: the clock); every round logs its seed
// and kind, and a failure names the one to replay. S3PD_SOAK_SKIP lists
// kinds not to run (comma-separated).
func TestSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("the soak runs without -short")
	}
	d := 20 * time.Second
	if v := os.Getenv("S3PD_SOAK"); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			t.Fatalf("S3PD_SOAK=%q: %v", v, err)
		}
	}
	base := uint64(time.Now().UnixNano())
	if v := os.Getenv("S3PD_SOAK_SEED"); v != "" {
		if _, err := fmt.Sscan(v, &base); err != nil {
			t.Fatalf("S3PD_SOAK_SEED=%q: %v", v, err)
		}
	}
	skip := map[string]bool{}
	for _, k := range strings.Split(os.Getenv("S3PD_SOAK_SKIP"), ",") {
		skip[strings.TrimSpace(k)] = true
	}
	t.Logf("soak for %s from seed %d (replay one round with S3PD_SOAK_SEED=<its seed> S3PD_SOAK=1s)", d, base)
	deadline := time.Now().Add(d)
	rounds := 0
	kinds := map[string]int{}
	for seed := base; rounds == 0 || time.Now().Before(deadline); seed++ {
		kind := soakKinds[seed%uint64(len(soakKinds))]
		if skip[kind.name] {
			continue
		}
		// A subtest per round: its server and DESTs go when it ends.
		t.Run(fmt.Sprint("seed=", seed, "/", kind.name), func(t *testing.T) { kind.run(t, seed) })
		rounds++
		kinds[kind.name]++
		if t.Failed() {
			t.Fatalf("round with seed %d failed: replay it with S3PD_SOAK_SEED=%d S3PD_SOAK=1s", seed, seed)
		}
	}
	t.Logf("%d rounds %v, no wrong byte at a final name, every exit code matching the disk", rounds, kinds)
}

// soakKinds are the kinds of round, taken in turn by seed.
var soakKinds = []struct {
	name string
	run  func(t *testing.T, seed uint64)
}{
	{"files", soakRound}, {"files", soakRound}, {"stdout", soakStdoutRound},
	{"files", soakRound}, {"redirect", soakRedirectRound}, {"nested", soakNestedRound},
}

// soakObject is one object of a round's dataset.
type soakObject struct {
	key  string
	size int
}

// soakDataset draws a dataset spec of a few groups.
func soakDataset(rng *rand.Rand) (string, []soakObject) {
	var specs []string
	var objs []soakObject
	for g := range 1 + rng.IntN(3) {
		count := 1 + rng.IntN(4)
		size := []int{0, 1 + rng.IntN(4096), 10_000 + rng.IntN(200_000), 1<<20 + rng.IntN(3<<20)}[rng.IntN(4)]
		name := fmt.Sprintf("s/g%d", g)
		specs = append(specs, fmt.Sprintf("%s:%d:%d", name, count, size))
		for i := range count {
			objs = append(objs, soakObject{key: fmt.Sprintf("%s/%08d", name, i), size: size})
		}
	}
	return strings.Join(specs, ","), objs
}

// soakFaults draws a few fault rules.
func soakFaults(rng *rand.Rand, objs []soakObject) []s3emu.Rule {
	at := func() int64 { return int64(rng.IntN(300_000)) }
	get := []func() s3emu.Action{
		func() s3emu.Action { return s3emu.Status{Code: []int{500, 503, 502}[rng.IntN(3)]} },
		func() s3emu.Action { return s3emu.Reset{At: at()} },
		func() s3emu.Action { return s3emu.Truncate{At: at()} },
		func() s3emu.Action { return s3emu.ShortBody{At: at()} },
		func() s3emu.Action { return s3emu.WrongRange{Shift: 1 + int64(rng.IntN(100))} },
		func() s3emu.Action { return s3emu.IgnoreRange{} },
		func() s3emu.Action { return s3emu.Flip{At: at()} },
		func() s3emu.Action { return s3emu.Chunked{} },
		func() s3emu.Action { return s3emu.CloseBody{} },
		func() s3emu.Action { return s3emu.NoClamp{} },
	}
	// Silences cost a stall timeout each: they go to one object's
	// requests, not to every range of every object.
	slow := []func() s3emu.Action{
		func() s3emu.Action { return s3emu.Stall{At: at(), For: 3 * time.Second} },
		func() s3emu.Action { return s3emu.Delay{For: 3 * time.Second} },
	}
	list := []func() s3emu.Action{
		func() s3emu.Action { return s3emu.Status{Code: 500} },
		func() s3emu.Action { return s3emu.DupEntry{Index: rng.IntN(3)} },
		func() s3emu.Action { return s3emu.BadTime{Index: rng.IntN(3)} },
		func() s3emu.Action { return s3emu.NoToken{Empty: rng.IntN(2) == 0} },
		func() s3emu.Action { return s3emu.SameToken{} },
		func() s3emu.Action { return s3emu.Delay{For: 3 * time.Second} },
	}
	var rules []s3emu.Rule
	for range rng.IntN(5) {
		r := s3emu.Rule{Key: "*", Attempt: 1 + rng.IntN(3), Times: 1 + rng.IntN(3)}
		if rng.IntN(2) == 0 {
			r.Key = objs[rng.IntN(len(objs))].key
		}
		if rng.IntN(2) == 0 {
			r.Range = "*"
		}
		r.Action = get[rng.IntN(len(get))]()
		if rng.IntN(5) == 0 {
			r = s3emu.Rule{Key: objs[rng.IntN(len(objs))].key, Attempt: 1 + rng.IntN(2), Times: 1 + rng.IntN(2), Action: slow[rng.IntN(len(slow))]()}
		}
		if rng.IntN(4) == 0 {
			r = s3emu.Rule{Method: "LIST", Key: "*", Attempt: 1 + rng.IntN(3), Times: 1 + rng.IntN(2), Action: list[rng.IntN(len(list))]()}
		}
		rules = append(rules, r)
	}
	return rules
}

// soakRound is one round: a server, two DESTs, kills and resumes.
func soakRound(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	spec, objs := soakDataset(rng)
	rules := soakFaults(rng, objs)
	endpoint := s3emu.NewTestServer(t, s3emu.Options{Dataset: spec, MaxKeys: 1 + rng.IntN(4), Faults: s3emu.NewFaults(rules...)}).URL
	var desc []string
	for _, r := range rules {
		desc = append(desc, fmt.Sprintf("%s %s attempt=%d times=%d range=%q %s", r.Method, r.Key, r.Attempt, r.Times, r.Range, r.Action))
	}
	t.Logf("seed %d: dataset %s, faults [%s]", seed, spec, strings.Join(desc, "; "))
	args := soakArgs(rng, endpoint)
	var wg sync.WaitGroup
	for run := range 2 {
		kill := rng.IntN(2) == 0
		delay := time.Duration(20+rng.IntN(600)) * time.Millisecond
		// The killed run and its rerun may cut parts at different
		// sizes: journals the rerun does not look up must still go.
		killed, rerun := soakThreshold(rng), soakThreshold(rng)
		dest := t.TempDir()
		wg.Add(1)
		go func() {
			defer wg.Done()
			if kill {
				soakKill(t, withDest(args, dest, killed...), delay)
				checkFinalNames(t, seed, dest, objs, nil)
			}
			code, lines, stderr := soakGet(t, withDest(args, dest, rerun...))
			checkFinalNames(t, seed, dest, objs, lines)
			checkExit(t, seed, run, code, lines, dest, objs, stderr)
		}()
	}
	wg.Wait()
}

// soakArgs are a round's get flags, with the source prefix last.
func soakArgs(rng *rand.Rand, endpoint string) []string {
	return []string{"get", "--endpoint-url", endpoint, "--region", "us-east-1", "--no-sign-request", "--quiet", "--json",
		"--stall-timeout", "1s", "--partsize", []string{"64KiB", "256KiB", "1MiB"}[rng.IntN(3)],
		"--threads", fmt.Sprint(1 + rng.IntN(4)), "--workers", fmt.Sprint(1 + rng.IntN(4)), "s3://" + s3emu.DefaultBucket + "/s/"}
}

// soakThreshold draws a --multipart-threshold, or none (the default).
func soakThreshold(rng *rand.Rand) []string {
	if v := []string{"", "256KiB", "1MiB", "64MiB"}[rng.IntN(4)]; v != "" {
		return []string{"--multipart-threshold", v}
	}
	return nil
}

// withDest is args with extra flags before the source, and dest last.
func withDest(args []string, dest string, extra ...string) []string {
	out := append([]string{}, args[:len(args)-1]...)
	out = append(out, extra...)
	return append(out, args[len(args)-1], dest)
}

// soakKill starts a get and SIGKILLs it after delay.
func soakKill(t *testing.T, args []string, delay time.Duration) {
	cmd := exec.Command(bin, args...)
	cmd.Env = baseEnv(t)
	if err := cmd.Start(); err != nil {
		t.Error(err)
		return
	}
	time.Sleep(delay) // when the kill lands is the fault injected
	cmd.Process.Kill()
	cmd.Wait()
}

// soakGet runs a get to its end and returns its exit code and JSON lines.
func soakGet(t *testing.T, args []string) (int, []map[string]any, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = baseEnv(t)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Errorf("run: %v", err)
	}
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil {
			lines = append(lines, m)
		}
	}
	return code, lines, stderr.String()
}

// checkFinalNames checks every file at a final name under dest against
// its object, byte for byte; lines (nil after a kill) say which objects
// the run reported ok, whose files must be there.
func checkFinalNames(t *testing.T, seed uint64, dest string, objs []soakObject, lines []map[string]any) {
	sizes := map[string]int{}
	for _, o := range objs {
		sizes[strings.TrimPrefix(o.key, "s/")] = o.size
	}
	filepath.WalkDir(dest, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() && (strings.HasPrefix(d.Name(), ".s3pd") || d.Name() == soakNestedDir) {
			return filepath.SkipDir // a work folder, or another run's DEST
		}
		if d.IsDir() || strings.HasPrefix(d.Name(), ".s3pd") {
			return nil
		}
		rel, _ := filepath.Rel(dest, p)
		size, ok := sizes[filepath.ToSlash(rel)]
		if !ok {
			t.Errorf("seed %d: %s: a file at a name no object has", seed, rel)
			return nil
		}
		got, _ := os.ReadFile(p)
		want := make([]byte, size)
		s3emu.SyntheticBytes("s/"+filepath.ToSlash(rel), 0, want)
		if !bytes.Equal(got, want) {
			t.Errorf("seed %d: %s: WRONG BYTES at a final name (%d bytes, want %d)", seed, rel, len(got), size)
		}
		return nil
	})
	for _, l := range lines {
		if l["type"] == "object" && l["status"] == "ok" {
			if _, err := os.Stat(filepath.Join(dest, fmt.Sprint(l["name"]))); err != nil {
				t.Errorf("seed %d: %v reported ok but its file is missing: %v", seed, l["key"], err)
			}
		}
	}
}

// checkExit checks that the exit code agrees with the run's report and
// with the disk: 0 only when every object is at its final name; 1 only
// with a failed object or a run-level error reported.
func checkExit(t *testing.T, seed uint64, run, code int, lines []map[string]any, dest string, objs []soakObject, stderr string) {
	failed, errLine := 0, false
	for _, l := range lines {
		switch {
		case l["type"] == "object" && l["status"] == "failed":
			failed++
		case l["type"] == "error":
			errLine = true
		}
	}
	switch code {
	case 0:
		for _, o := range objs {
			if _, err := os.Stat(filepath.Join(dest, strings.TrimPrefix(o.key, "s/"))); err != nil {
				t.Errorf("seed %d run %d: exit 0 but %s is missing: %v", seed, run, o.key, err)
			}
		}
		if left, err := os.ReadDir(filepath.Join(dest, ".s3pd")); !os.IsNotExist(err) {
			t.Errorf("seed %d run %d: exit 0 but the work folder remains (%d entries, %v)", seed, run, len(left), err)
		}
	case 1:
		if failed == 0 && !errLine {
			t.Errorf("seed %d run %d: exit 1 with no failed object and no error line\nstderr: %s", seed, run, stderr)
		}
	default:
		t.Errorf("seed %d run %d: exit %d\nstderr: %s", seed, run, code, stderr)
	}
}
