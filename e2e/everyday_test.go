package e2e

import (
	"crypto/md5"
	"encoding/base64"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/s3pd/s3pd/pkg/s3emu"
)

// everydayStore holds a small model stand-in: two weights and a config.
func everydayStore(t *testing.T) *store {
	t.Helper()
	s := emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory, Buckets: []string{"dst"}})
	s.put(t, "m/a.safetensors", randomBytes(1, 3000))
	s.put(t, "m/b.safetensors", randomBytes(2, 5000))
	s.put(t, "m/config.json", []byte(`{"x":1}`))
	return s
}

// TestEverydaySelection: an --include that no --exclude comes before
// is refused before any request (exit 2), with the command the user
// probably meant; the summary, --dry-run and --json say what the rules
// selected of what was listed.
func TestEverydaySelection(t *testing.T) {
	s := everydayStore(t)
	tests := []struct {
		name      string
		flags     []string
		code      int
		stderr    string   // what stderr must hold ("": nothing)
		stdout    []string // lines stdout must hold
		noStdout  bool     // stdout stays empty
		files     int      // files landed (-1: DEST is not made)
		selection string   // the summary's selection in --json, "" for none
	}{
		{"include alone", []string{"--include", "config.json"}, 2,
			"--include config.json with no --exclude before it would select everything", nil, true, -1, ""},
		{"include alone, --quiet", []string{"--quiet", "--include", "*.json"}, 2,
			"to take only what matches: s3pd get --endpoint-url", nil, true, -1, ""},
		{"include alone, --only-show-errors", []string{"--only-show-errors", "--include=*.json"}, 2,
			"--only-show-errors --exclude '*' '--include=*.json' s3://", nil, true, -1, ""},
		{"exclude then include", []string{"--exclude", "*", "--include", "config.json"}, 0, "",
			[]string{"selected: 1 of 3 objects (7 B of 7.82 KiB)", "objects: 1 transferred"}, false, 1, ""},
		{"wildcard source", nil, 0, "", // the URL's rules start with an exclude
			[]string{"selected: 2 of 3 objects"}, false, 2, ""},
		{"include after a wildcard", []string{"--include", "*.json"}, 0, "",
			[]string{"selected: 3 of 3 objects"}, false, 3, ""},
		{"no rules", nil, 0, "", []string{"objects: 3 transferred"}, false, 3, ""},
		{"dry run", []string{"--dry-run", "--exclude", "*", "--include", "*.json"}, 0, "",
			[]string{"selected: 1 of 3 objects (7 B of 7.82 KiB)", "would fetch: m/config.json"}, false, -1, ""},
		{"json", []string{"--json", "--exclude", "*.safetensors"}, 0, "", nil, false, 1,
			`"selection":{"listed_objects":3,"listed_bytes":8007,"selected_objects":1,"selected_bytes":7}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dest := filepath.Join(t.TempDir(), "dest")
			src := s.url("m/")
			if strings.Contains(tt.name, "wildcard") {
				src = s.url("m/*.safetensors")
			}
			r := run(t, nil, s.cmd("get", append(tt.flags, src, dest)...)...)
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d\n%s", r.code, tt.code, r.stderr)
			}
			if tt.stderr != "" && (!strings.Contains(r.stderr, tt.stderr) || strings.Count(r.stderr, "\n") != 1) {
				t.Errorf("stderr %q, want one line with %q", r.stderr, tt.stderr)
			}
			if tt.stderr == "" && r.stderr != "" {
				t.Errorf("stderr %q, want none", r.stderr)
			}
			for _, l := range tt.stdout {
				if !strings.Contains(r.stdout, l) {
					t.Errorf("stdout lacks %q:\n%s", l, r.stdout)
				}
			}
			if tt.noStdout && r.stdout != "" {
				t.Errorf("stdout is not empty:\n%s", r.stdout)
			}
			if tt.selection != "" && !strings.Contains(r.stdout, tt.selection) {
				t.Errorf("the JSON summary lacks %s:\n%s", tt.selection, r.stdout)
			}
			if tt.selection == "" && strings.Contains(r.stdout, `"selection"`) {
				t.Errorf("a selection without rules:\n%s", r.stdout)
			}
			if tt.files < 0 {
				if _, err := os.Stat(dest); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("DEST was made (%v), want none", err)
				}
			} else if got := len(tree(t, dest)); got != tt.files {
				t.Errorf("%d files landed, want %d", got, tt.files)
			}
		})
	}
}

// TestNothingSelected: a prefix with no object, or rules or a pattern
// that match none, exits 1 with one line naming it and makes no DEST;
// --allow-empty accepts the empty result. The same for copy, and an
// --include alone is refused by copy too.
func TestNothingSelected(t *testing.T) {
	s := everydayStore(t)
	emptyDir := t.TempDir()
	files := writeFiles(t, t.TempDir(), map[string][]byte{"a.txt": []byte("a")})
	tests := []struct {
		name   string
		args   []string // before DEST
		code   int
		stderr string
	}{
		{"empty prefix", []string{"get", s.url("nope/")}, 1, "nothing to download: no object under " + s.url("nope/")},
		{"pattern matches none", []string{"get", s.url("m/*.bin")}, 1, "nothing to download: " + s.url("m/*.bin") + " matches none of the 3 objects under " + s.url("m/")},
		{"pattern under an empty prefix", []string{"get", s.url("nope/*.bin")}, 1, "nothing to download: no object under " + s.url("nope/")},
		{"rules select none", []string{"get", "--exclude", "*", "--include", "*.bin", s.url("m/")}, 1,
			"nothing to download: --include/--exclude select none of the 3 objects under " + s.url("m/")},
		{"dry run", []string{"get", "--dry-run", s.url("nope/")}, 1, "nothing to download: no object under"},
		{"json", []string{"get", "--json", s.url("nope/")}, 1, "nothing to download"},
		{"allow empty", []string{"get", "--allow-empty", s.url("nope/")}, 0, ""},
		{"copy of an empty folder", []string{"copy", emptyDir}, 1, "nothing to upload: no file under " + emptyDir},
		{"copy S3 to local", []string{"copy", s.url("nope/")}, 1, "nothing to download: no object under"},
		{"copy include alone", []string{"copy", "--include", "*.txt", files}, 2, "to take only what matches: s3pd copy --endpoint-url"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dest := filepath.Join(t.TempDir(), "dest")
			if strings.HasPrefix(tt.name, "copy of") {
				dest = s.url("up/")
			}
			r := run(t, nil, s.cmd(tt.args[0], append(tt.args[1:], dest)...)...)
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d\n%s%s", r.code, tt.code, r.stdout, r.stderr)
			}
			if tt.stderr != "" && (!strings.Contains(r.stderr, tt.stderr) || strings.Count(r.stderr, "\n") != 1) {
				t.Errorf("stderr %q, want one line with %q", r.stderr, tt.stderr)
			}
			if tt.code != 0 && tt.name != "json" && r.stdout != "" {
				t.Errorf("stdout %q, want nothing", r.stdout)
			}
			if tt.name == "json" && !strings.Contains(r.stdout, `"exit_code":1`) {
				t.Errorf("--json: no error line with exit_code 1 on stdout:\n%s", r.stdout)
			}
			if _, err := os.Stat(dest); !strings.HasPrefix(dest, "s3://") && !errors.Is(err, os.ErrNotExist) {
				t.Errorf("DEST was made (%v), want none", err)
			}
		})
	}
}

// TestEverydayLines: at --log-level info and --debug, one line per object
// on stdout in the AWS CLI's form; --debug adds one start line; --quiet
// prints nothing at all on success.
func TestEverydayLines(t *testing.T) {
	s := everydayStore(t)
	dest := t.TempDir()
	up := writeFiles(t, t.TempDir(), map[string][]byte{"f": []byte("hello")})
	jsonFile := filepath.Join(t.TempDir(), "run.json")
	tests := []struct {
		name   string
		args   []string
		stdout []string // lines stdout must hold, each whole
		stderr []string // what stderr must hold
		quiet  bool     // stdout and stderr stay empty
	}{
		{"download at info", s.cmd("get", "--log-level", "info", s.url("m/"), dest), []string{
			"download: s3://" + s.bucket + "/m/a.safetensors to " + filepath.Join(dest, "a.safetensors"),
			"download: s3://" + s.bucket + "/m/config.json to " + filepath.Join(dest, "config.json"),
		}, nil, false},
		{"skip at --debug", s.cmd("get", "--debug", s.url("m/"), dest), []string{
			"skip: s3://" + s.bucket + "/m/config.json to " + filepath.Join(dest, "config.json") + ": unchanged (size and mtime)",
		}, []string{"start", "endpoint", s.endpoint, "credentials", "max_concurrent_requests", "part_size", "nics"}, false},
		{"upload", s.cmd("copy", "--log-level", "info", filepath.Join(up, "f"), s.url("up/f")), []string{
			"upload: " + filepath.Join(up, "f") + " to s3://" + s.bucket + "/up/f",
		}, nil, false},
		{"copy", s.cmd("copy", "--log-level", "info", s.url("m/config.json"), "s3://dst/c.json"), []string{
			"copy: s3://" + s.bucket + "/m/config.json to s3://dst/c.json",
		}, nil, false},
		{"--quiet prints nothing", s.cmd("get", "--quiet", "--overwrite", s.url("m/"), t.TempDir()), nil, nil, true},
		{"--quiet at info prints nothing", s.cmd("get", "--quiet", "--log-level", "info", s.url("m/"), t.TempDir()), nil, nil, true},
		{"bench --quiet prints nothing", []string{"bench", "--quiet", "--dataset", "d:2:1MiB", "--ttfb", "1ms"}, nil, nil, true},
		{"--quiet keeps --json", s.cmd("get", "--quiet", "--json", "--json-file", jsonFile, s.url("m/"), t.TempDir()), nil, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, nil, tt.args...)
			if r.code != 0 {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
			}
			if strings.Contains(tt.name, "--json") {
				file, _ := os.ReadFile(jsonFile)
				for what, text := range map[string]string{"stdout": r.stdout, "--json-file": string(file)} {
					if l := jsonLines(t, text); len(l["summary"]) != 1 || len(l["object"]) != 3 {
						t.Errorf("%s under --quiet: %d summary and %d object lines, want 1 and 3:\n%s", what, len(l["summary"]), len(l["object"]), text)
					}
				}
			}
			lines := strings.Split(r.stdout, "\n")
			for _, want := range tt.stdout {
				found := false
				for _, l := range lines {
					found = found || l == want
				}
				if !found {
					t.Errorf("stdout lacks the line %q:\n%s", want, r.stdout)
				}
			}
			for _, want := range tt.stderr {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
				}
			}
			if tt.quiet && r.stdout+r.stderr != "" {
				t.Errorf("--quiet printed:\nstdout: %s\nstderr: %s", r.stdout, r.stderr)
			}
		})
	}
}

// TestEverydayUnits: every rate a person reads is one pair of units,
// MiB/s or GiB/s and decimal Gbit/s: the summary, bench (with its
// percentiles one line each and no count twice), bench --sweep, bench
// compare and the HTML report; --json adds gbps beside gibps.
func TestEverydayUnits(t *testing.T) {
	rate := regexp.MustCompile(`[0-9.]+ (MiB|GiB)/s \([0-9.]+ Gbit/s\)`)
	dir := t.TempDir()
	page := filepath.Join(dir, "r.html")
	bench := run(t, nil, "bench", "--dataset", "d:4:4MiB", "--ttfb", "2ms", "--conn-rate", "20MB", "--interval", "20ms", "--report", page)
	sweepRun := run(t, nil, "bench", "--sweep", "--sweep-time", "200ms", "--sweep-parts", "1MiB", "--sweep-requests", "2,4",
		"--dataset", "d:4:4MiB", "--ttfb", "2ms", "--conn-rate", "20MB")
	js := run(t, nil, "bench", "--json", "--dataset", "d:4:4MiB", "--ttfb", "2ms")
	a, b := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
	os.WriteFile(a, []byte(js.stdout), 0o644)
	os.WriteFile(b, []byte(js.stdout), 0o644)
	compare := run(t, nil, "bench", "compare", a, b)
	html, _ := os.ReadFile(page)
	for _, r := range []result{bench, sweepRun, js, compare} {
		if r.code != 0 {
			t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
	}
	tests := []struct {
		name, text string
		want       []string // regexps the text holds
	}{
		{"bench", bench.stdout, []string{`bytes: .* in .*, ` + rate.String(),
			`(?m)^time to first byte: p50 [0-9.]+ ms, p90 [0-9.]+ ms, p99 [0-9.]+ ms, p99.9 [0-9.]+ ms$`,
			`(?m)^request time: p50 [0-9.]+ ms, p90 [0-9.]+ ms, p99 [0-9.]+ ms, p99.9 [0-9.]+ ms$`,
			`over time \(\d+ intervals of [0-9.]+ s\): min [0-9.]+ (B|KiB|MiB|GiB)/s.*, max ` + rate.String()}},
		{"bench --sweep", sweepRun.stdout, []string{`RATE`, `(?m)^best: .*\(` + rate.String() + `\)(: .*)?$`}},
		{"bench compare", compare.stdout, []string{`throughput \(MiB/s\)`, `throughput \(Gbit/s\)`}},
		{"report", string(html), []string{`<th>throughput</th><td>` + rate.String(), `Gbit/s`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, w := range tt.want {
				if !regexp.MustCompile(w).MatchString(tt.text) {
					t.Errorf("lacks %s:\n%s", w, tt.text)
				}
			}
			for _, bad := range []string{"Gibps", "GIBPS", "slowdowns:", "Gbps"} {
				if strings.Contains(tt.text, bad) {
					t.Errorf("still says %q:\n%s", bad, tt.text)
				}
			}
		})
	}
	if n := strings.Count(bench.stdout, "time to first byte"); n != 1 {
		t.Errorf("bench has %d time-to-first-byte lines, want 1", n)
	}
	sum := jsonLines(t, js.stdout)["summary"][0]
	bps, g, gi := sum["bytes_per_second"].(float64), sum["gbps"].(float64), sum["gibps"].(float64)
	if math.Abs(g-bps*8/1e9) > 1e-6*g || math.Abs(gi-bps*8/(1<<30)) > 1e-6*gi {
		t.Errorf("gbps %v and gibps %v do not derive from bytes_per_second %v", g, gi, bps)
	}
}

// headerProxy stands in front of endpoint and records, for each GET of
// an object, the value of header.
func headerProxy(t *testing.T, endpoint, header string) (string, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var seen []string
	target, _ := url.Parse(endpoint)
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Query().Get("list-type") == "" {
			mu.Lock()
			seen = append(seen, r.Header.Get(header))
			mu.Unlock()
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := seen
		seen = nil
		return out
	}
}

// TestEverydaySpellings: the AWS CLI's --sse-c AES256 with --sse-c-key,
// --size-only as a rule for keeping files and objects, and
// --exact-timestamps and --page-size accepted with a note of what s3pd
// does instead.
func TestEverydaySpellings(t *testing.T) {
	s := everydayStore(t)
	const key = "0123456789abcdef0123456789abcdef"
	sum := md5.Sum([]byte(key))
	keyMD5 := base64.StdEncoding.EncodeToString(sum[:])
	ep, seen := headerProxy(t, s.endpoint, "X-Amz-Server-Side-Encryption-Customer-Key-Md5")
	at := []string{"--endpoint-url", ep, "--region", "us-east-1", "--no-progress"}
	sized := t.TempDir() // holds config.json: same size, other bytes and mtime
	os.WriteFile(filepath.Join(sized, "config.json"), []byte(`{"y":2}`), 0o644)
	up := writeFiles(t, t.TempDir(), map[string][]byte{"config.json": []byte(`{"z":3}`)})
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string // stdout holds it
		stderr string // stderr holds it
		md5    string // the SSE-C key MD5 every object GET carried
	}{
		{"--sse-c AES256", append([]string{"get", "--sse-c", "AES256", "--sse-c-key", key}, at...), 0, "objects: 1 transferred", "", keyMD5},
		{"--sse-c alone", append([]string{"get", "--sse-c", "--sse-c-key", key}, at...), 0, "objects: 1 transferred", "", keyMD5},
		{"--sse-c without a key", append([]string{"get", "--sse-c", "AES256"}, at...), 2, "", "--sse-c needs the key", ""},
		{"--sse-c of another algorithm", append([]string{"get", "--sse-c", "aws:kms", "--sse-c-key", key}, at...), 2, "", "the only SSE-C algorithm is AES256", ""},
		{"--sse-c on an upload", s.cmd("cp", "--sse-c-key", key, filepath.Join(up, "config.json"), s.url("up/c")), 2, "", "apply to downloads", ""},
		{"--size-only keeps a file of the size", s.cmd("get", "--size-only", "--log-level", "info", s.url("m/config.json"), sized+"/"), 0,
			"skip: s3://" + s.bucket + "/m/config.json to " + filepath.Join(sized, "config.json") + ": unchanged (size, --size-only)", "", ""},
		{"without it the file is fetched", s.cmd("get", s.url("m/config.json"), sized+"/"), 0, "objects: 1 transferred", "", ""},
		{"--size-only keeps an object of the size", s.cmd("cp", "--size-only", filepath.Join(up, "config.json"), s.url("m/config.json")), 0,
			"objects: 0 transferred, 1 skipped", "", ""},
		{"--size-only with --overwrite", s.cmd("get", "--size-only", "--overwrite", s.url("m/"), t.TempDir()), 2, "", "not with --overwrite", ""},
		{"--exact-timestamps", s.cmd("get", "--exact-timestamps", s.url("m/"), t.TempDir()), 0, "objects: 3 transferred", "--exact-timestamps is not needed", ""},
		{"--page-size", s.cmd("get", "--page-size", "100", s.url("m/"), t.TempDir()), 0, "objects: 3 transferred", "--page-size is not needed", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := tt.args
			if args[0] == "get" && strings.HasPrefix(tt.name, "--sse-c") {
				args = append(args, s.url("m/config.json"), t.TempDir()+"/")
			}
			seen()
			r := run(t, nil, args...)
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d\n%s%s", r.code, tt.code, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stdout, tt.stdout) || !strings.Contains(r.stderr, tt.stderr) {
				t.Errorf("want %q on stdout and %q on stderr:\nstdout: %s\nstderr: %s", tt.stdout, tt.stderr, r.stdout, r.stderr)
			}
			if tt.md5 != "" {
				got := seen()
				if len(got) == 0 {
					t.Fatal("no object GET went through the proxy")
				}
				for _, g := range got {
					if g != tt.md5 {
						t.Errorf("an object GET carried SSE-C key MD5 %q, want %q", g, tt.md5)
					}
				}
			}
		})
	}
	if got := s.get(t, "m/config.json"); string(got) != `{"x":1}` {
		t.Errorf("--size-only replaced the object of the same size: %q", got)
	}
}
