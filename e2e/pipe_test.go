package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/s3pd/s3pd/pkg/s3emu"
)

// TestPipeCarriesOnlyTheObject: with DEST -, stdout holds the object's
// bytes and nothing else; the summary and the --json lines go to stderr,
// and --json-file gets the same JSON lines.
func TestPipeCarriesOnlyTheObject(t *testing.T) {
	s := emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory})
	objects := map[string][]byte{
		"small.bin": randomBytes(21, 64<<10),
		"multi.bin": randomBytes(22, 9*mib+5), // parts of 1 MiB, out of order
	}
	for k, v := range objects {
		s.put(t, k, v)
	}
	for key, data := range objects {
		for _, mode := range []string{"text", "json", "json-file"} {
			t.Run(key+"/"+mode, func(t *testing.T) {
				jsonFile := filepath.Join(t.TempDir(), "lines.json")
				args := s.cmd("get", "--partsize", "1MiB", "--threads", "8", "--multipart-threshold", "1MiB")
				switch mode {
				case "json":
					args = append(args, "--json")
				case "json-file":
					args = append(args, "--json", "--json-file", jsonFile)
				}
				r := run(t, nil, append(args, s.url(key), "-")...)
				if r.code != 0 {
					t.Fatalf("exit %d\n%s", r.code, r.stderr)
				}
				if got, want := sum([]byte(r.stdout)), sum(data); got != want {
					t.Fatalf("stdout: %d bytes, sha256 %s; want %d bytes, sha256 %s", len(r.stdout), got, len(data), want)
				}
				switch mode {
				case "text":
					if !strings.Contains(r.stderr, "objects: 1 transferred") {
						t.Errorf("no summary on stderr:\n%s", r.stderr)
					}
				case "json", "json-file":
					if n := summaryLines(t, r.stderr); n != 1 {
						t.Errorf("%d JSON summary lines on stderr, want 1:\n%s", n, r.stderr)
					}
				}
				if mode == "json-file" {
					b, err := os.ReadFile(jsonFile)
					if err != nil {
						t.Fatal(err)
					}
					if n := summaryLines(t, string(b)); n != 1 {
						t.Errorf("%d summary lines in --json-file, want 1:\n%s", n, b)
					}
				}
			})
		}
	}
}

// TestJSONFileAloneKeepsTheHumanSummary: --json-file without --json
// writes JSON lines to the file and the human summary to stdout.
func TestJSONFileAloneKeepsTheHumanSummary(t *testing.T) {
	s := emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory})
	s.put(t, "p/a", randomBytes(23, 1000))
	jsonFile := filepath.Join(t.TempDir(), "lines.json")
	r := run(t, nil, s.cmd("get", "--json-file", jsonFile, s.url("p/"), t.TempDir())...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "objects: 1 transferred") || strings.Contains(r.stdout, "{") {
		t.Errorf("stdout is not the human summary:\n%s", r.stdout)
	}
	b, err := os.ReadFile(jsonFile)
	if err != nil {
		t.Fatal(err)
	}
	if n := summaryLines(t, string(b)); n != 1 {
		t.Errorf("%d summary lines in --json-file, want 1:\n%s", n, b)
	}
	if !strings.Contains(string(b), `"key":"p/a"`) {
		t.Errorf("--json-file has no line for p/a:\n%s", b)
	}
}

// summaryLines counts the JSON lines of type summary in out, skipping
// lines that are not JSON (logs).
func summaryLines(t *testing.T, out string) int {
	t.Helper()
	n := 0
	for _, l := range strings.Split(out, "\n") {
		var v struct{ Type string }
		if json.Unmarshal([]byte(l), &v) == nil && v.Type == "summary" {
			n++
		}
	}
	return n
}
