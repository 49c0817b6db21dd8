package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/s3pd/s3pd/pkg/s3emu"
)

// canary is a secret that must never appear in any output.
const canary = "canary-secret-8f3a2b1c9d"

// objectLines parses the --json lines of finished objects by key.
func objectLines(t *testing.T, stdout string) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("stdout line %q is not JSON: %v", line, err)
		}
		if m["type"] == "object" {
			out[m["key"].(string)] = m
		}
	}
	return out
}

func TestFaults(t *testing.T) {
	const size = 3 << 20
	const victim = "f/00000001"
	tests := []struct {
		name  string
		rule  s3emu.Rule
		flags []string
		fails bool   // the victim fails; the others arrive
		error string // in the victim's error
		skip  string // the victim is skipped with this reason
		// retried: the summary counts at least one retry
		retried bool
	}{
		{name: "500 once", rule: s3emu.Rule{Key: victim, Action: s3emu.Status{Code: 500}}},
		{name: "502 once", rule: s3emu.Rule{Key: victim, Action: s3emu.Status{Code: 502, S3Code: "BadGateway"}}},
		{name: "SlowDown twice", rule: s3emu.Rule{Key: victim, Times: 2, Action: s3emu.Status{Code: 503}}},
		{name: "RequestTimeout", rule: s3emu.Rule{Key: victim, Action: s3emu.Status{Code: 400, S3Code: "RequestTimeout"}}},
		{name: "reset mid-body", rule: s3emu.Rule{Key: victim, Action: s3emu.Reset{At: 100_000}}},
		{name: "truncated, honest length", rule: s3emu.Rule{Key: victim, Action: s3emu.Truncate{At: 70_000}}},
		{name: "short content-length", rule: s3emu.Rule{Key: victim, Action: s3emu.ShortBody{At: 1000}}},
		{name: "wrong content-range", rule: s3emu.Rule{Key: victim, Action: s3emu.WrongRange{Shift: 1}}},
		{name: "200 without range", rule: s3emu.Rule{Key: victim, Times: -1, Action: s3emu.IgnoreRange{}}},
		{name: "stall", rule: s3emu.Rule{Key: victim, Action: s3emu.Stall{At: 1000, For: 20 * time.Second}}, flags: []string{"--stall-timeout", "1s"}},
		{name: "403 denied", rule: s3emu.Rule{Key: victim, Times: -1, Action: s3emu.Status{Code: 403}}, fails: true, error: "AccessDenied"},
		{name: "404 gone", rule: s3emu.Rule{Key: victim, Times: -1, Action: s3emu.Status{Code: 404, S3Code: "NoSuchKey"}}, fails: true, error: "NoSuchKey"},
		{name: "flipped byte", rule: s3emu.Rule{Key: victim, Range: "bytes=1048576-2097151", Times: -1, Action: s3emu.Flip{At: 4242}}, fails: true, error: "checksum mismatch"},
		// A body damaged once in transit: the object is fetched once more
		// (a retry), and arrives.
		{name: "flipped byte once", rule: s3emu.Rule{Key: victim, Range: "bytes=1048576-2097151", Action: s3emu.Flip{At: 4242}}, retried: true},
		{name: "replaced mid-download", rule: s3emu.Rule{Key: victim, Range: "bytes=2097152-3145727", Action: s3emu.Replace{}}, fails: true, error: "modified during download"},
		{name: "archived", rule: s3emu.Rule{Key: victim, Times: -1, Action: s3emu.Status{Code: 403, S3Code: "InvalidObjectState"}}, skip: "archived"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := emuStore(t, s3emu.Options{Dataset: "f:3:3MiB", Faults: s3emu.NewFaults(tt.rule)})
			s.signed = true // sign with the canary secret
			root := t.TempDir()
			dest := filepath.Join(root, "dest")
			args := append([]string{"--partsize", "1MiB", "--threads", "3", "--json", "--log-level", "debug", s.url("f/"), dest}, tt.flags...)
			start := time.Now()
			r := runEnv(t, []string{"AWS_SECRET_ACCESS_KEY=" + canary, "AWS_SESSION_TOKEN=" + canary + "-token"}, s.cmd("get", args...)...)
			took := time.Since(start)
			if strings.Contains(r.stdout+r.stderr, canary) {
				t.Fatalf("the secret appears in the output")
			}
			want := 0
			if tt.fails || tt.skip != "" {
				want = 1
			}
			if r.code != want {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, want, r.stdout, r.stderr)
			}
			lines := objectLines(t, r.stdout)
			for _, key := range []string{"f/00000000", "f/00000001", "f/00000002"} {
				path := filepath.Join(dest, strings.TrimPrefix(key, "f/"))
				line := lines[key]
				if key == victim && (tt.fails || tt.skip != "") {
					if _, err := os.Stat(path); !os.IsNotExist(err) {
						t.Errorf("%s: a failed object has a file at its final name", key)
					}
					if tt.fails && (line["status"] != "failed" || !strings.Contains(line["error"].(string), tt.error)) {
						t.Errorf("%s: JSON line %v, want failed with %q", key, line, tt.error)
					}
					if tt.skip != "" && (line["status"] != "skipped" || !strings.Contains(line["reason"].(string), tt.skip)) {
						t.Errorf("%s: JSON line %v, want skipped: %q", key, line, tt.skip)
					}
					continue
				}
				checkSynthetic(t, path, key, size)
				if cs, _ := line["checksums"].([]any); line["status"] != "ok" || line["verification"] != "verified" || len(cs) != 1 || cs[0] != "crc64nvme" {
					t.Errorf("%s: JSON line %v, want ok and verified crc64nvme", key, line)
				}
			}
			if tt.retried && !strings.Contains(r.stdout, `"type":"summary"`) || tt.retried && strings.Contains(r.stdout, `"retries":0,`) {
				t.Errorf("the summary counts no retry:\n%s", r.stdout)
			}
			tree(t, dest) // no temporary files
			if entries, _ := os.ReadDir(root); len(entries) != 1 {
				t.Errorf("something was written outside DEST: %v", entries)
			}
			if tt.name == "stall" && took > 15*time.Second {
				t.Errorf("a stall of 20s took %s to overcome with --stall-timeout 1s", took)
			}
		})
	}
}

// runEnv is run with extra environment.
func runEnv(t *testing.T, env []string, args ...string) result {
	t.Helper()
	return run(t, env, args...)
}

func TestResumedRangeIsNotRefetched(t *testing.T) {
	const victim = "f/00000000"
	s := emuStore(t, s3emu.Options{Dataset: "f:1:4MiB", Faults: s3emu.NewFaults(
		s3emu.Rule{Key: victim, Range: "bytes=0-4194303", Action: s3emu.Truncate{At: 3 << 20}})})
	dest := t.TempDir()
	r := run(t, nil, s.cmd("get", "--partsize", "4MiB", s.url("f/"), dest)...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	checkSynthetic(t, filepath.Join(dest, "00000000"), victim, 4<<20)
	// 3 MiB before the connection broke (a FIN, so none of it is lost in
	// socket buffers as it can be with a reset), then only the missing
	// 1 MiB: refetching the range would send 7 MiB.
	if sent := s.emu.BytesSentFor(s.bucket, victim); sent != 4<<20 {
		t.Fatalf("server sent %d bytes for a 4 MiB object broken at 3 MiB, want exactly 4 MiB: the range was refetched", sent)
	}
}

func TestSlowDownStorm(t *testing.T) {
	const objects, size = 64, 4 << 20 // 256 ranges of 1 MiB
	s := emuStore(t, s3emu.Options{Dataset: "storm:64:4MiB", TTFB: 50 * time.Millisecond, Faults: s3emu.NewFaults(
		s3emu.Rule{Key: "storm/*", Range: "*", Times: 2, Action: s3emu.Status{Code: 503}})})
	dest := t.TempDir()

	// Sample the server's own count of requests in flight.
	var stop atomic.Bool
	var mu sync.Mutex
	var firstWave, afterWave int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for !stop.Load() {
			st := s.emu.Stats()
			mu.Lock()
			if st.FaultsInjected < 256 {
				firstWave = max(firstWave, st.InFlight)
			} else {
				afterWave = max(afterWave, st.InFlight)
			}
			mu.Unlock()
			time.Sleep(2 * time.Millisecond) // a sampler's cadence, not a wait for a state
		}
	}()
	r := run(t, nil, s.cmd("get", "--workers", "64", "--threads", "4", "--partsize", "1MiB", "--max-concurrent-requests", "256", s.url("storm/"), dest)...)
	stop.Store(true)
	<-done
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	for i := range objects {
		key := "storm/" + padded(i)
		checkSynthetic(t, filepath.Join(dest, padded(i)), key, size)
	}
	st := s.emu.Stats()
	if st.FaultsInjected != 512 {
		t.Errorf("faults injected %d, want 512 (every range twice)", st.FaultsInjected)
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("requests in flight: up to %d in the first wave, up to %d after it (server max %d)", firstWave, afterWave, st.MaxInFlight)
	// The gate bounds ranges (GETs) at 256; each object's HeadObject for
	// its checksum and the listing come on top.
	if limit := int64(256 + objects + 1); st.MaxInFlight > limit || firstWave < 32 {
		t.Errorf("server saw up to %d requests in flight (%d in the first wave), want many and at most %d", st.MaxInFlight, firstWave, limit)
	}
	if afterWave > 192 {
		t.Errorf("after 256 SlowDowns the server still saw %d requests in flight, want s3pd to back off to 3/4 of 256 or less", afterWave)
	}
}

func padded(i int) string {
	s := "0000000" + string(rune('0'+i/10%10)) + string(rune('0'+i%10))
	return s[len(s)-8:]
}
