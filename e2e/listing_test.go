package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/s3pd/s3pd/pkg/s3emu"
)

// summaryOf parses the --json summary line.
func summaryOf(t *testing.T, stdout string) map[string]any {
	t.Helper()
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["type"] == "summary" {
			return m
		}
	}
	t.Fatalf("no JSON summary in %q", stdout)
	return nil
}

// lastLine parses the last --json line.
func lastLine(t *testing.T, stdout string) map[string]any {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	var m map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &m); err != nil {
		t.Fatalf("last line %q: %v", lines[len(lines)-1], err)
	}
	return m
}

// A listing is checked like a response: a hostile or broken listing ends
// the run with an error, never as complete, and --delete then deletes
// nothing. Six objects, listed two per page.
func TestHostileListings(t *testing.T) {
	const objects, size = 6, 1000
	tests := []struct {
		name    string
		rule    s3emu.Rule
		code    int
		arrived int      // objects at their final names (the first ones)
		stderr  string   // in the run's error
		failed  []string // these keys fail on their last-modified
	}{
		{name: "truncated without token", rule: s3emu.Rule{Method: "LIST", Key: "*", Action: s3emu.NoToken{}},
			code: 1, arrived: 2, stderr: "no continuation token"},
		{name: "truncated with empty token", rule: s3emu.Rule{Method: "LIST", Key: "*", Attempt: 2, Action: s3emu.NoToken{Empty: true}},
			code: 1, arrived: 4, stderr: "no continuation token"},
		{name: "repeated token", rule: s3emu.Rule{Method: "LIST", Key: "*", Attempt: 2, Times: -1, Action: s3emu.SameToken{}},
			code: 1, arrived: 4, stderr: "repeated a continuation token"},
		{name: "page 2 denied", rule: s3emu.Rule{Method: "LIST", Key: "*", Attempt: 2, Action: s3emu.Status{Code: 403}},
			code: 1, arrived: 2, stderr: "page 2"},
		{name: "key listed twice", rule: s3emu.Rule{Method: "LIST", Key: "*", Attempt: 2, Action: s3emu.DupEntry{Index: 1}},
			code: 0, arrived: 6},
		{name: "unparsable last-modified", rule: s3emu.Rule{Method: "LIST", Key: "*", Attempt: 2, Times: -1, Action: s3emu.BadTime{Index: 0}},
			code: 1, arrived: 6, failed: []string{"l/00000002", "l/00000004"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := emuStore(t, s3emu.Options{Dataset: "l:6:1000", MaxKeys: 2, Faults: s3emu.NewFaults(tt.rule)})
			dest := t.TempDir()
			// A stale local copy of an object that still exists and a file
			// whose object is gone: a listing that did not complete must
			// delete neither.
			for _, name := range []string{"00000005", "orphan"} {
				if err := os.WriteFile(filepath.Join(dest, name), []byte("local"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			start := time.Now()
			r := run(t, nil, s.cmd("get", "--json", "--delete", "--workers", "1", s.url("l/"), dest)...)
			if took := time.Since(start); took > time.Minute {
				t.Errorf("took %s", took)
			}
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, tt.code, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stderr, tt.stderr) {
				t.Errorf("stderr %q lacks %q", r.stderr, tt.stderr)
			}
			lines := objectLines(t, r.stdout)
			sum := summaryOf(t, r.stdout)
			ok := 0
			for i := range objects {
				key := "l/" + padded(i)
				path := filepath.Join(dest, padded(i))
				if slices.Contains(tt.failed, key) {
					if l := lines[key]; l["status"] != "failed" || !strings.Contains(l["error"].(string), "last-modified") {
						t.Errorf("%s: %v, want failed on its last-modified", key, l)
					}
					continue
				}
				if i < tt.arrived {
					checkSynthetic(t, path, key, size)
					ok++
				}
			}
			if got := sum["objects"].(float64); int(got) != ok {
				t.Errorf("summary counts %v objects, want %d", got, ok)
			}
			if last := lastLine(t, r.stdout); tt.code != 0 && sum["failed"].(float64) == 0 &&
				(last["type"] != "error" || last["exit_code"] != float64(tt.code)) {
				t.Errorf("exit %d but the summary reports no failure and no error line follows: %v, %v", tt.code, sum, last)
			}
			_, orphanErr := os.Stat(filepath.Join(dest, "orphan"))
			if tt.code != 0 {
				if orphanErr != nil {
					t.Errorf("--delete ran after a listing that did not complete: %v", orphanErr)
				}
				if tt.arrived <= 5 {
					if b, err := os.ReadFile(filepath.Join(dest, "00000005")); err != nil || string(b) != "local" {
						t.Errorf("the local copy of an object the run never listed changed: %q, %v", b, err)
					}
				}
			} else if !os.IsNotExist(orphanErr) {
				t.Errorf("a complete listing: --delete kept the orphan (%v)", orphanErr)
			}
			if st := s.emu.Stats(); st.ListRequests > 6 {
				t.Errorf("%d listing requests for 3 pages", st.ListRequests)
			}
		})
	}
}

// A server that accepts a request and never answers is given up on after
// --stall-timeout and asked again, for listing pages and for the GET that
// resolves a single object (where the transport would wait two minutes).
func TestSilentServerIsRetried(t *testing.T) {
	for _, tt := range []struct {
		name string
		rule s3emu.Rule
		url  string
	}{
		{name: "listing page", rule: s3emu.Rule{Method: "LIST", Key: "*", Attempt: 2, Action: s3emu.Delay{For: time.Hour}}, url: "l/"},
		{name: "single object", rule: s3emu.Rule{Key: "l/00000001", Action: s3emu.Delay{For: time.Hour}}, url: "l/00000001"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := emuStore(t, s3emu.Options{Dataset: "l:3:1000", MaxKeys: 2, Faults: s3emu.NewFaults(tt.rule)})
			dest := t.TempDir() + "/"
			start := time.Now()
			r := run(t, nil, s.cmd("get", "--stall-timeout", "1s", s.url(tt.url), dest)...)
			took := time.Since(start)
			if r.code != 0 {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
			}
			if took > 20*time.Second {
				t.Errorf("a server silent for an hour held the run %s with --stall-timeout 1s", took)
			}
			checkSynthetic(t, filepath.Join(dest, "00000001"), "l/00000001", 1000)
		})
	}
}
