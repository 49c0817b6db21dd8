package e2e

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/s3pd/s3pd/pkg/s3emu"
)

// jsonField is one row of a table in docs/JSON.md.
type jsonField struct {
	always bool
	enum   []string // allowed values for an enum (or array of enum) field
}

// jsonSpec reads docs/JSON.md: for each line type, its fields.
func jsonSpec(t *testing.T) map[string]map[string]jsonField {
	t.Helper()
	b, err := os.ReadFile("../docs/JSON.md")
	if err != nil {
		t.Fatal(err)
	}
	ticks := regexp.MustCompile("`([^`]+)`")
	heading := regexp.MustCompile("^## `([a-z]+)`$")
	spec := map[string]map[string]jsonField{}
	var cur map[string]jsonField
	for _, line := range strings.Split(string(b), "\n") {
		if m := heading.FindStringSubmatch(line); m != nil {
			cur = map[string]jsonField{}
			spec[m[1]] = cur
			continue
		}
		if strings.HasPrefix(line, "## ") {
			cur = nil
		}
		cells := strings.Split(line, "|")
		if cur == nil || len(cells) < 6 || !strings.Contains(cells[1], "`") {
			continue
		}
		f := jsonField{always: strings.TrimSpace(cells[3]) == "always"}
		if typ := strings.TrimSpace(cells[2]); typ == "enum" || typ == "array of enum" {
			for _, m := range ticks.FindAllStringSubmatch(cells[4], -1) {
				f.enum = append(f.enum, m[1])
			}
		}
		for _, m := range ticks.FindAllStringSubmatch(cells[1], -1) {
			cur[m[1]] = f
		}
	}
	for _, typ := range []string{"object", "delete", "interval", "summary", "error"} {
		if len(spec[typ]) == 0 {
			t.Fatalf("docs/JSON.md defines no fields for type %q", typ)
		}
	}
	return spec
}

// checkLines parses out as JSON lines and checks each against the spec:
// every field documented for its type, every "always" field present,
// enum values among those listed. It returns the lines by type.
func checkLines(t *testing.T, spec map[string]map[string]jsonField, out string) map[string][]map[string]any {
	t.Helper()
	byType := map[string][]map[string]any{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("not a JSON line: %q: %v", sc.Text(), err)
		}
		typ, _ := line["type"].(string)
		fields, ok := spec[typ]
		if !ok || line["schema"] != "s3pd/1" {
			t.Fatalf("line %s: unknown type or schema", sc.Text())
		}
		for name, value := range line {
			f, ok := fields[name]
			if !ok {
				t.Errorf("%s line has %q, which docs/JSON.md does not define: %s", typ, name, sc.Text())
				continue
			}
			if f.enum == nil {
				continue
			}
			values := []any{value}
			if a, isArray := value.([]any); isArray {
				values = a
			}
			for _, v := range values {
				if s, _ := v.(string); !slices.Contains(f.enum, s) {
					t.Errorf("%s line: %s = %v, want one of %v", typ, name, v, f.enum)
				}
			}
		}
		for name, f := range fields {
			if _, ok := line[name]; f.always && !ok {
				t.Errorf("%s line lacks %q: %s", typ, name, sc.Text())
			}
		}
		byType[typ] = append(byType[typ], line)
	}
	return byType
}

// find returns the line whose key is key.
func find(lines []map[string]any, key string) map[string]any {
	for _, l := range lines {
		if l["key"] == key {
			return l
		}
	}
	return nil
}

func TestJSONContract(t *testing.T) {
	spec := jsonSpec(t)
	s := emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory,
		Faults: s3emu.NewFaults(s3emu.Rule{Key: "p/gone", Times: -1, Action: s3emu.Status{Code: 404, S3Code: "NoSuchKey"}})})
	s.put(t, "p/a", randomBytes(1, 1000))
	s.put(t, "p/big", randomBytes(2, 3<<20))
	s.put(t, "p/gone", randomBytes(3, 10))
	s.put(t, "p/kept", randomBytes(4, 10))
	dest := t.TempDir()
	if err := os.WriteFile(filepath.Join(dest, "kept"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}

	// Every status of an object, a failure, and the summary and error lines.
	r := run(t, nil, s.cmd("get", "--json", "--no-clobber", "--partsize", "1MiB", s.url("p/"), dest)...)
	lines := checkLines(t, spec, r.stdout)
	if r.code != 1 || len(lines["object"]) != 4 || len(lines["summary"]) != 1 || len(lines["error"]) != 1 {
		t.Fatalf("exit %d, lines %v\n%s", r.code, lines, r.stderr)
	}
	a, big, gone, kept := find(lines["object"], "p/a"), find(lines["object"], "p/big"), find(lines["object"], "p/gone"), find(lines["object"], "p/kept")
	if a["status"] != "ok" || a["verification"] != "verified" || a["destination"] != filepath.Join(dest, "a") || a["size"] != 1000.0 {
		t.Errorf("p/a: %v", a)
	}
	if cs, _ := big["checksums"].([]any); big["status"] != "ok" || len(cs) != 1 || cs[0] != "crc64nvme" {
		t.Errorf("p/big: %v, want verified by crc64nvme", big)
	}
	if gone["status"] != "failed" || gone["error_code"] != "NoSuchKey" || gone["http_status"] != 404.0 {
		t.Errorf("p/gone: %v, want failed NoSuchKey 404", gone)
	}
	if kept["status"] != "skipped" || !strings.Contains(kept["reason"].(string), "no-clobber") {
		t.Errorf("p/kept: %v, want skipped by --no-clobber", kept)
	}
	sum := lines["summary"][0]
	if sum["objects"] != 2.0 || sum["failed"] != 1.0 || sum["skipped"] != 1.0 || sum["verified_objects"] != 2.0 ||
		sum["bytes"] != float64(1000+3<<20) || sum["verified_bytes"] != float64(1000+3<<20) {
		t.Errorf("summary %v, want 2 transferred and verified, 1 failed, 1 skipped", sum)
	}
	if e := lines["error"][0]; e["exit_code"] != 1.0 || e["error_code"] == "" {
		t.Errorf("error line %v, want exit_code 1", e)
	}

	// --json-file alone gets the error line of a failed run too, after
	// its object and summary lines.
	jsonFile := filepath.Join(t.TempDir(), "lines.json")
	r = run(t, nil, s.cmd("get", "--json-file", jsonFile, s.url("p/"), t.TempDir())...)
	b, err := os.ReadFile(jsonFile)
	if err != nil {
		t.Fatal(err)
	}
	lines = checkLines(t, spec, string(b))
	if r.code != 1 || len(lines["summary"]) != 1 || len(lines["error"]) != 1 || lines["error"][0]["exit_code"] != 1.0 {
		t.Fatalf("exit %d, --json-file lines %v, want a summary and an error line with exit_code 1\n%s", r.code, lines, r.stderr)
	}

	// --delete writes delete lines; a dry run a dry-run summary.
	if err := os.WriteFile(filepath.Join(dest, "stale"), []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = run(t, nil, s.cmd("get", "--json", "--delete", "--dry-run", "--exclude", "gone", s.url("p/"), dest)...)
	lines = checkLines(t, spec, r.stdout)
	if r.code != 0 || len(lines["delete"]) != 1 || lines["delete"][0]["name"] != "stale" || lines["delete"][0]["dry_run"] != true {
		t.Fatalf("exit %d, delete lines %v\n%s", r.code, lines["delete"], r.stderr)
	}
	if sum := lines["summary"][0]; sum["dry_run"] != true || sum["objects"] != 0.0 {
		t.Errorf("dry-run summary %v", sum)
	}

	// A start-up failure writes one error line and nothing else.
	r = run(t, nil, s.cmd("get", "--json", "s3://no-such-bucket/x/", t.TempDir())...)
	lines = checkLines(t, spec, r.stdout)
	if r.code != 2 || len(lines) != 1 || len(lines["error"]) != 1 || lines["error"][0]["error_code"] != "NoSuchBucket" {
		t.Fatalf("exit %d, lines %v, want one error line NoSuchBucket\n%s", r.code, lines, r.stderr)
	}
	// So does a usage error.
	r = run(t, nil, s.cmd("get", "--json", "--verify", "sometimes", s.url("p/"), t.TempDir())...)
	lines = checkLines(t, spec, r.stdout)
	if r.code != 2 || len(lines["error"]) != 1 || lines["error"][0]["error_code"] != "UsageError" {
		t.Fatalf("exit %d, lines %v, want one error line UsageError", r.code, lines)
	}
}

// Under --log-format json, every line on stderr is JSON, the last error's
// included.
func TestLogFormatJSONStderr(t *testing.T) {
	s := emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory,
		Faults: s3emu.NewFaults(s3emu.Rule{Key: "p/gone", Times: -1, Action: s3emu.Status{Code: 404, S3Code: "NoSuchKey"}})})
	s.put(t, "p/a", randomBytes(1, 1000))
	s.put(t, "p/gone", randomBytes(3, 10))
	for _, args := range [][]string{
		s.cmd("get", "--log-format", "json", s.url("p/"), t.TempDir()),
		s.cmd("get", "--log-format", "json", "s3://no-such-bucket/x/", t.TempDir()),
		s.cmd("get", "--log-format", "json", "--workers", "0", s.url("p/"), t.TempDir()),
	} {
		r := run(t, nil, args...)
		if r.code == 0 || r.stderr == "" {
			t.Fatalf("%v: exit %d, stderr %q", args, r.code, r.stderr)
		}
		for _, line := range strings.Split(strings.TrimSpace(r.stderr), "\n") {
			var m map[string]any
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Errorf("%v: stderr line %q is not JSON", args, line)
			}
		}
	}
}

// An object without a checksum (moto stores none) is reported unverified,
// with the reason and the option that would check it.
func TestJSONUnverifiedOnMoto(t *testing.T) {
	spec := jsonSpec(t)
	s := motoStore(t)
	s.put(t, "u/a", randomBytes(5, 5000))
	r := run(t, nil, s.cmd("get", "--json", s.url("u/"), t.TempDir())...)
	lines := checkLines(t, spec, r.stdout)
	if r.code != 0 || len(lines["object"]) != 1 {
		t.Fatalf("exit %d, lines %v\n%s", r.code, lines, r.stderr)
	}
	o := lines["object"][0]
	if o["verification"] != "unverified" || o["unverified"] != "md5-only" {
		t.Errorf("object %v, want unverified md5-only", o)
	}
	sum := lines["summary"][0]
	if sum["unverified_objects"] != 1.0 || sum["unverified_reasons"].(map[string]any)["md5-only"] != 1.0 {
		t.Errorf("summary %v, want 1 unverified md5-only", sum)
	}
	// The human summary says so, and what would check it.
	r = run(t, nil, s.cmd("get", s.url("u/"), t.TempDir())...)
	if r.code != 0 || !strings.Contains(r.stdout+r.stderr, "1 md5-only: --verify full checks") {
		t.Errorf("human summary lacks the unverified reason and hint:\n%s%s", r.stdout, r.stderr)
	}
	r = run(t, nil, s.cmd("get", "--verify", "full", s.url("u/"), t.TempDir())...)
	if r.code != 0 || !strings.Contains(r.stdout+r.stderr, "verified: 1 object (4.88 KiB) by md5 1") {
		t.Errorf("--verify full: want verified by md5:\n%s%s", r.stdout, r.stderr)
	}
}
