package e2e

import (
	"path/filepath"
	"strings"
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

// TestEverydaySelection: an --include alone warns, before any request,
// that it selects everything; the summary, --dry-run and --json say
// what the rules selected of what was listed.
func TestEverydaySelection(t *testing.T) {
	s := everydayStore(t)
	const warning = "selects everything"
	tests := []struct {
		name      string
		flags     []string
		warn      bool
		stdout    []string // lines stdout must hold
		noStdout  bool     // stdout stays empty
		files     int      // files landed (-1: not a download)
		selection string   // the summary's selection in --json, "" for none
	}{
		{"include alone", []string{"--include", "config.json"}, true,
			[]string{"selected: 3 of 3 objects (7.82 KiB of 7.82 KiB)", "objects: 3 transferred"}, false, 3, ""},
		{"exclude then include", []string{"--exclude", "*", "--include", "config.json"}, false,
			[]string{"selected: 1 of 3 objects (7 B of 7.82 KiB)", "objects: 1 transferred"}, false, 1, ""},
		{"wildcard source", nil, false, // the URL's rules start with an exclude
			[]string{"selected: 2 of 3 objects"}, false, 2, ""},
		{"include after a wildcard", []string{"--include", "*.json"}, false,
			[]string{"selected: 3 of 3 objects"}, false, 3, ""},
		{"no rules", nil, false, []string{"objects: 3 transferred"}, false, 3, ""},
		{"include alone, --quiet", []string{"--quiet", "--include", "config.json"}, true, nil, true, 3, ""},
		{"include alone, --only-show-errors", []string{"--only-show-errors", "--include", "config.json"}, true, nil, true, 3, ""},
		{"dry run", []string{"--dry-run", "--exclude", "*", "--include", "*.json"}, false,
			[]string{"selected: 1 of 3 objects (7 B of 7.82 KiB)", "would fetch: m/config.json"}, false, 0, ""},
		{"json", []string{"--json", "--exclude", "*.safetensors"}, false, nil, false, 1,
			`"selection":{"listed_objects":3,"listed_bytes":8007,"selected_objects":1,"selected_bytes":7}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dest := t.TempDir()
			src := s.url("m/")
			if strings.Contains(tt.name, "wildcard") {
				src = s.url("m/*.safetensors")
			}
			r := run(t, nil, s.cmd("get", append(tt.flags, src, dest)...)...)
			if r.code != 0 {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
			}
			if got := strings.Contains(r.stderr, warning); got != tt.warn {
				t.Errorf("warning %q on stderr: %v, want %v\n%s", warning, got, tt.warn, r.stderr)
			}
			if tt.warn && !strings.Contains(r.stderr, `--exclude '*' --include "config.json"`) {
				t.Errorf("the warning does not give the fix:\n%s", r.stderr)
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
			if got := len(tree(t, dest)); got != tt.files {
				t.Errorf("%d files landed, want %d", got, tt.files)
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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, nil, tt.args...)
			if r.code != 0 {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
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
