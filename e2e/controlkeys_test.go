package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/s3pd/s3pd/pkg/s3emu"
)

// TestKeysWithControlCharactersPrintEscaped: a key may hold a newline or
// an escape sequence; human output (--dry-run lines, ls, the failure
// recap) shows it escaped, so it can neither print a fake line nor drive
// the terminal.
func TestKeysWithControlCharactersPrintEscaped(t *testing.T) {
	const fake = "k/evil\nwould fetch: k/fake (1 bytes)"
	const esc = "k/esc\x1b[2Jcleared"
	const bidi = "k/bidi\u202egpj.exe\u2066x\u2069"
	s := emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory,
		Faults: s3emu.NewFaults(s3emu.Rule{Key: "k/*", Times: -1, Action: s3emu.Status{Code: 403}})})
	s.put(t, fake, []byte("x"))
	s.put(t, esc, []byte("y"))
	s.put(t, bidi, []byte("b"))
	s.put(t, "k/plain", []byte("z"))
	check := func(what, out string, wantLines int, prefix string) {
		t.Helper()
		if strings.ContainsRune(out, '\x1b') {
			t.Errorf("%s: a raw escape reached the output: %q", what, out)
		}
		if strings.ContainsAny(out, "\u202e\u2066\u2069") {
			t.Errorf("%s: a raw bidirectional control reached the output: %q", what, out)
		}
		if !strings.Contains(out, `k/bidi\u202egpj.exe\u2066x\u2069`) {
			t.Errorf("%s: the bidi key is not shown escaped:\n%s", what, out)
		}
		n := 0
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, prefix) {
				n++
			}
		}
		if n != wantLines {
			t.Errorf("%s: %d lines start with %q, want %d:\n%s", what, n, prefix, wantLines, out)
		}
		if !strings.Contains(out, `k/evil\nwould fetch: k/fake`) || !strings.Contains(out, `k/esc\x1b[2Jcleared`) {
			t.Errorf("%s: the keys are not shown escaped:\n%s", what, out)
		}
	}

	r := run(t, nil, s.cmd("get", "--dry-run", s.url("k/"), t.TempDir())...)
	if r.code != 0 {
		t.Fatalf("--dry-run: exit %d\n%s", r.code, r.stderr)
	}
	check("--dry-run", r.stdout, 4, "would fetch: ")

	r = run(t, nil, s.cmd("ls", "--recursive", s.url("k/"))...)
	if r.code != 0 {
		t.Fatalf("ls: exit %d\n%s", r.code, r.stderr)
	}
	check("ls", r.stdout, 4, "20") // each line starts with its date

	r = run(t, nil, s.cmd("get", s.url("k/"), t.TempDir())...)
	if r.code != 1 {
		t.Fatalf("get with every GET denied: exit %d, want 1\n%s", r.code, r.stderr)
	}
	check("failure lines", r.stderr, 4, "s3pd: failed: k/") // one each, on stderr
}

// TestInvisibleKeysPrintApart: keys that differ only in a zero-width
// space, a byte order mark, a no-break space or a trailing blank look
// alike on a terminal; ls and --dry-run show each escaped, so no two
// print the same, and ls --json carries each key exactly.
func TestInvisibleKeysPrintApart(t *testing.T) {
	s := emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory})
	shown := map[string]string{ // key -> how human output shows it
		"k/sp ": `k/sp\x20`, "k/sp": "k/sp", "k/z\u200bw": `k/z\u200bw`, "k/zw": "k/zw",
		"k/\ufeffbom": `k/\ufeffbom`, "k/bom": "k/bom", "k/nb\u00a0sp": `k/nb\u00a0sp`, `k/back\slash`: `k/back\\slash`,
	}
	for k := range shown {
		s.put(t, k, []byte(k))
	}
	lines := func(what, out, prefix string) {
		t.Helper()
		got := map[string]bool{}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if i := strings.Index(line, prefix); i >= 0 {
				name := line[i:]
				if j := strings.Index(name, " -> "); j >= 0 && what == "--dry-run" {
					name = name[:j]
				}
				if got[name] {
					t.Errorf("%s: %q printed twice:\n%s", what, name, out)
				}
				got[name] = true
			}
		}
		for k, want := range shown {
			if !got[want] {
				t.Errorf("%s: key %q not shown as %q:\n%s", what, k, want, out)
			}
		}
	}
	r := run(t, nil, s.cmd("ls", "--recursive", s.url("k/"))...)
	if r.code != 0 {
		t.Fatalf("ls: exit %d\n%s", r.code, r.stderr)
	}
	lines("ls", r.stdout, "k/")
	r = run(t, nil, s.cmd("get", "--dry-run", s.url("k/"), t.TempDir())...)
	if r.code != 0 {
		t.Fatalf("--dry-run: exit %d\n%s", r.code, r.stderr)
	}
	lines("--dry-run", r.stdout, "k/")
	r = run(t, nil, s.cmd("ls", "--json", "--recursive", s.url("k/"))...)
	if r.code != 0 {
		t.Fatalf("ls --json: exit %d\n%s", r.code, r.stderr)
	}
	keys := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var e struct{ Type, Key string }
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("ls --json line %q: %v", line, err)
		}
		if e.Type == "entry" {
			keys[e.Key] = true
		}
	}
	for k := range shown {
		if !keys[k] {
			t.Errorf("ls --json lacks the exact key %q: %v", k, keys)
		}
	}
}
