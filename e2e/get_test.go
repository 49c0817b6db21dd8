package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/s3pd/s3pd/pkg/s3emu"
)

const mib = 1 << 20

// stores runs a suite against the emulator's memory backend and moto.
func stores(t *testing.T, suite func(t *testing.T, s *store)) {
	t.Run("emulator", func(t *testing.T) {
		suite(t, emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory}))
	})
	t.Run("moto", func(t *testing.T) {
		suite(t, motoStore(t))
	})
}

func TestGetPrefixEveryByte(t *testing.T) {
	stores(t, func(t *testing.T, s *store) {
		want := map[string][]byte{
			"empty":          {},
			"one":            {42},
			"exact-3-parts":  randomBytes(1, 3*mib),
			"3-parts-plus-1": randomBytes(2, 3*mib+1),
			"below-part":     randomBytes(3, mib-1),
			"a/b/c/nested":   randomBytes(4, 100_000),
			"a/b/sibling":    randomBytes(5, 10),
			"a..b":           randomBytes(6, 7),
			// Listed with encoding-type=url and read back by s3pd's own
			// XML scanner: spaces, plus, entities, escapes, UTF-8.
			"odd key+&<'%20\">": randomBytes(7, 11),
			"ünï/€ 😀":           randomBytes(8, 5),
		}
		for name, data := range want {
			s.put(t, "data/"+name, data)
		}
		s.put(t, "other/outside", []byte("not under the prefix"))
		for _, url := range []string{"data/", "data", "data/*"} {
			dest := t.TempDir()
			r := run(t, nil, s.cmd("get", "--partsize", "1MiB", "--threads", "4", "--workers", "3", s.url(url), dest)...)
			if r.code != 0 {
				t.Fatalf("get %s: exit %d\n%s", url, r.code, r.stderr)
			}
			sameTree(t, dest, want)
			if !strings.Contains(r.stdout, fmt.Sprintf("objects: %d transferred", len(want))) {
				t.Errorf("summary does not count %d objects:\n%s", len(want), r.stdout)
			}
		}
	})
}

func TestGetSingleObject(t *testing.T) {
	stores(t, func(t *testing.T, s *store) {
		data := randomBytes(7, 2*mib+3)
		s.put(t, "dir/model.bin", data)
		s.put(t, "dir/model.bin.other", []byte("x"))
		tests := []struct {
			name string
			dest func(dir string) string
			at   string
		}{
			{"into existing directory", func(d string) string { return d }, "model.bin"},
			{"into directory with slash", func(d string) string { return d + "/new/" }, "new/model.bin"},
			{"to a file name", func(d string) string { return filepath.Join(d, "renamed") }, "renamed"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				dir := t.TempDir()
				r := run(t, nil, s.cmd("get", "--partsize", "1MiB", s.url("dir/model.bin"), tt.dest(dir))...)
				if r.code != 0 {
					t.Fatalf("exit %d\n%s", r.code, r.stderr)
				}
				sameTree(t, dir, map[string][]byte{tt.at: data})
			})
		}
		t.Run("to stdout", func(t *testing.T) {
			r := run(t, nil, s.cmd("get", "--partsize", "256KiB", "--threads", "8", s.url("dir/model.bin"), "-")...)
			if r.code != 0 {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
			}
			if r.stdout != string(data) {
				t.Fatalf("stdout is not exactly the object's bytes (got %d bytes, want %d)", len(r.stdout), len(data))
			}
		})
	})
}

func TestGetThousandsOfSmallObjects(t *testing.T) {
	s := emuStore(t, s3emu.Options{Dataset: "small:3000:4KiB"})
	dest := t.TempDir()
	r := run(t, nil, s.cmd("get", "--json", s.url("small/"), dest)...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	files := tree(t, dest)
	if len(files) != 3000 {
		t.Fatalf("got %d files, want 3000", len(files))
	}
	buf := make([]byte, 4096)
	for name, h := range files {
		s3emu.SyntheticBytes("small/"+name, 0, buf)
		if h != sum(buf) {
			t.Fatalf("%s: content differs from the synthetic object", name)
		}
	}
	// --json: one line per object, then one summary line.
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 3001 {
		t.Fatalf("got %d JSON lines, want 3001", len(lines))
	}
	var last struct {
		Type    string `json:"type"`
		Objects int    `json:"objects"`
		Bytes   int64  `json:"bytes"`
	}
	if err := json.Unmarshal([]byte(lines[3000]), &last); err != nil || last.Type != "summary" || last.Objects != 3000 || last.Bytes != 3000*4096 {
		t.Fatalf("summary line %q: %+v, %v", lines[3000], last, err)
	}
}

func TestGetStartsBeforeListingEnds(t *testing.T) {
	s := emuStore(t, s3emu.Options{Dataset: "k:2500:1KiB", LogRequests: true})
	r := run(t, nil, s.cmd("get", "--benchmark", "--workers", "4", s.url("k/"))...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	firstGet, lists := -1, 0
	secondList := -1
	for i, req := range s.emu.Log() {
		switch {
		case req.Method == "GET" && req.Key != "" && firstGet < 0:
			firstGet = i
		case req.Method == "GET" && req.Key == "" && strings.Contains(req.Query, "list-type=2"):
			lists++
			if lists == 2 {
				secondList = i
			}
		}
	}
	if lists < 3 || firstGet < 0 {
		t.Fatalf("got %d list requests and first GET at %d; want 3 pages and GETs", lists, firstGet)
	}
	if firstGet > secondList {
		t.Fatalf("first GET is request %d, after the second listing page (request %d)", firstGet, secondList)
	}
}

func TestGetListsInBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("lists 200,000 keys")
	}
	s := emuStore(t, s3emu.Options{Dataset: "many:200000:1"})
	r := run(t, nil, s.cmd("get", "--benchmark", "--dry-run", "--json", s.url("many/"))...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	n := 0
	var last struct {
		Type    string `json:"type"`
		DryRun  bool   `json:"dry_run"`
		Fetch   int    `json:"would_transfer"`
		PeakRSS int64  `json:"peak_rss_kib"`
	}
	sc := bufio.NewScanner(strings.NewReader(r.stdout))
	for sc.Scan() {
		n++
		json.Unmarshal(sc.Bytes(), &last)
	}
	if n != 200_001 || last.Type != "summary" || !last.DryRun || last.Fetch != 200_000 {
		t.Fatalf("got %d JSON lines ending %+v, want 200,001 ending with the dry run's totals", n, last)
	}
	// Peak RSS as s3pd reads it from /proc (VmHWM): rusage's ru_maxrss
	// would count this test process's memory, which os/exec's vfork shares.
	const limit = 96 << 10 // KiB
	if last.PeakRSS <= 0 || last.PeakRSS > limit {
		t.Fatalf("peak RSS %d KiB while listing 200,000 keys, want under %d KiB", last.PeakRSS, limit)
	}
	t.Logf("peak RSS listing 200,000 keys: %d KiB", last.PeakRSS)
}

func TestGetBadInput(t *testing.T) {
	s := emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory})
	s.put(t, "x", []byte("x"))
	notDir := filepath.Join(t.TempDir(), "file")
	os.WriteFile(notDir, []byte("x"), 0o644)
	tests := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"malformed url", []string{"get", "s3:/nope", t.TempDir()}, 2, "s3://"},
		{"bad bucket name", []string{"get", "s3://A!/x", t.TempDir()}, 2, "bucket name"},
		{"missing bucket", []string{"get", "s3://no-such-bucket/x/", t.TempDir()}, 2, "NoSuchBucket"},
		{"missing dest", []string{"get", s.url("x")}, 2, "DEST"},
		{"dest under a file", []string{"get", s.url("x"), filepath.Join(notDir, "sub", "x")}, 2, "not a directory"},
		{"bad part size", []string{"get", "--partsize", "16XB", s.url("x"), t.TempDir()}, 2, "16XB"},
		{"zero workers", []string{"get", "--workers", "0", s.url("x"), t.TempDir()}, 2, "workers"},
		{"unknown flag", []string{"get", "--nope", s.url("x"), t.TempDir()}, 2, "nope"},
		{"prefix to stdout", []string{"get", s.url("x/"), "-"}, 2, "single object"},
		{"unknown nic", []string{"get", "--nics", "nosuch0", s.url("x"), t.TempDir()}, 2, "nosuch0"},
		{"bad verify mode", []string{"get", "--verify", "some", s.url("x"), t.TempDir()}, 2, "--verify"},
		{"verify-existing with no-clobber", []string{"get", "--verify-existing", "--no-clobber", s.url("x"), t.TempDir()}, 2, "--verify-existing"},
		{"negative stall timeout", []string{"get", "--stall-timeout", "-5s", s.url("x"), t.TempDir()}, 2, "--stall-timeout"},
		{"zero stall timeout", []string{"get", "--stall-timeout", "0", s.url("x"), t.TempDir()}, 2, "--stall-timeout"},
		{"no unit stall timeout", []string{"get", "--stall-timeout", "30", s.url("x"), t.TempDir()}, 2, "--stall-timeout"},
		{"negative ttfb", []string{"bench", "--ttfb", "-1ms"}, 2, "--ttfb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, nil, s.cmd(tt.args[0], tt.args[1:]...)...)
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d\nstderr: %s", r.code, tt.code, r.stderr)
			}
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			if len(lines) != 1 || !strings.Contains(r.stderr, tt.msg) {
				t.Fatalf("stderr %q: want one line mentioning %q", r.stderr, tt.msg)
			}
			if strings.Contains(r.stderr, "goroutine") {
				t.Fatalf("stack trace on stderr: %s", r.stderr)
			}
		})
	}
}

func TestLegacyFormRunsGet(t *testing.T) {
	s := emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory})
	data := randomBytes(9, 5000)
	s.put(t, "p/a", data)
	dest := t.TempDir()
	r := run(t, nil, append(s.args(), "--loglevel", "error", "--workers=4", "--threads=2", "--partsize=1024", s.url("p/"), dest)...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	sameTree(t, dest, map[string][]byte{"a": data})
}

func TestGetMissingObjectIsAnError(t *testing.T) {
	s := emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory})
	s.put(t, "p/a", []byte("x"))
	r := run(t, nil, s.cmd("get", s.url("p/typo"), t.TempDir())...)
	if r.code != 1 || !strings.Contains(r.stderr, "no object") {
		t.Fatalf("get of a missing object: exit %d, stderr %q; want 1 and a clear error", r.code, r.stderr)
	}
	r = run(t, nil, s.cmd("get", s.url("empty/"), t.TempDir())...)
	if r.code != 1 || !strings.Contains(r.stderr, "nothing to download: no object under "+s.url("empty/")) {
		t.Fatalf("get of an empty prefix: exit %d, want 1 naming it\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = run(t, nil, s.cmd("get", "--allow-empty", s.url("empty/"), t.TempDir())...)
	if r.code != 0 || !strings.Contains(r.stdout, "objects: 0 transferred") {
		t.Fatalf("get --allow-empty of an empty prefix: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestDryRunPlansWithoutTheCards: a dry run moves no data over the cards
// of --nics, so the command of a larger machine can be planned here: the
// cards that are not here are named in a warning, and the plan is made
// over the default route. A real run with them is a usage error.
func TestDryRunPlansWithoutTheCards(t *testing.T) {
	s := emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory})
	s.put(t, "p/x", []byte("x"))
	dest := t.TempDir()
	r := run(t, nil, s.cmd("get", "--dry-run", "--nics", "nosuch0,nosuch1", s.url("p/"), dest)...)
	if r.code != 0 {
		t.Fatalf("dry run with cards not here: exit %d, want 0\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "nosuch0") || !strings.Contains(r.stderr, "a real run would stop") {
		t.Errorf("dry run with cards not here: stderr %q, want a warning naming nosuch0", r.stderr)
	}
	if !strings.Contains(r.stdout, "would fetch 1 object") {
		t.Errorf("dry run with cards not here: stdout %q, want the plan", r.stdout)
	}
	if r := run(t, nil, s.cmd("get", "--nics", "nosuch0,nosuch1", s.url("p/"), dest)...); r.code != 2 {
		t.Errorf("real run with cards not here: exit %d, want 2", r.code)
	}
}

// TestUnsafeFlagValuesRefusedBeforeAnyRequest: a flag value that cannot
// go into a request header (a newline in --region, which is in every
// signature, or in --expected-bucket-owner), or a --conflict-suffix that
// would put a copy in another folder, is a usage error: exit 2, one line
// naming the flag, and not one request sent.
func TestUnsafeFlagValuesRefusedBeforeAnyRequest(t *testing.T) {
	s := emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory})
	s.put(t, "x", []byte("x"))
	before := s.emu.Stats().Requests
	for _, tc := range []struct {
		args []string
		flag string
	}{
		{[]string{"get", "--region", "a\nb", s.url("x"), t.TempDir()}, "region"},
		{[]string{"cat", "--region", "a\nb", s.url("x")}, "region"},
		{[]string{"ls", "--region", "a\nb", s.url("x")}, "region"},
		{[]string{"get", "--region", "us east", s.url("x"), t.TempDir()}, "region"},
		{[]string{"get", "--expected-bucket-owner", "a\nb", s.url("x"), t.TempDir()}, "--expected-bucket-owner"},
		{[]string{"cat", "--expected-bucket-owner", "1\r\nX-Evil: 1", s.url("x")}, "--expected-bucket-owner"},
		{[]string{"copy", "--content-type", "text/plain\nX-Evil: 1", s.url("x"), s.url("y")}, "--content-type"},
		{[]string{"get", "--conflict-suffix", "/../b", s.url(""), t.TempDir()}, "--conflict-suffix"},
		{[]string{"get", "--conflict-suffix", "sub/x", s.url(""), t.TempDir()}, "--conflict-suffix"},
	} {
		args := append([]string{tc.args[0]}, append(s.args(), tc.args[1:]...)...)
		r := run(t, nil, args...)
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		if r.code != 2 || len(lines) != 1 || !strings.Contains(lines[0], tc.flag) {
			t.Errorf("%q: exit %d, stderr %q; want exit 2 and one line naming %s", tc.args, r.code, r.stderr, tc.flag)
		}
	}
	if n := s.emu.Stats().Requests - before; n != 0 {
		t.Errorf("%d requests reached the server, want none", n)
	}
}
