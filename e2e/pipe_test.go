package e2e

import (
	"encoding/json"
	"fmt"
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

// TestPipeVerifiesMD5InOrder: a stream to stdout of an object whose only
// checksum is its single-part MD5 ETag, fetched in several ranges, is
// summed in order as it goes out: under --verify full and (with no CRC
// to check) under auto. A flipped byte cannot be fetched again once it is
// out: exit 1, one line saying how many bytes on stdout are wrong. A
// file destination under auto stays unverified (md5-only), as before.
func TestPipeVerifiesMD5InOrder(t *testing.T) {
	const key = "p/00000000"
	size := 3*mib + 777
	want := make([]byte, size)
	s3emu.SyntheticBytes(key, 0, want)
	url := "s3://" + s3emu.DefaultBucket + "/" + key
	for _, tc := range []struct {
		name   string
		flip   bool
		args   []string
		code   int
		verify string // the --json object's verification, when clean
	}{
		{name: "get - full, flipped", flip: true, args: []string{"get", "--verify", "full", url, "-"}, code: 1},
		{name: "cat full, flipped", flip: true, args: []string{"cat", "--verify", "full", url}, code: 1},
		{name: "get - auto, flipped", flip: true, args: []string{"get", url, "-"}, code: 1},
		{name: "cat auto, flipped", flip: true, args: []string{"cat", url}, code: 1},
		{name: "get - full, clean", args: []string{"get", "--verify", "full", "--json", url, "-"}, verify: "verified"},
		{name: "get - auto, clean", args: []string{"get", "--json", url, "-"}, verify: "verified"},
		{name: "get - off, flipped", flip: true, args: []string{"get", "--verify", "off", "--json", url, "-"}, verify: "off"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var faults *s3emu.Faults
			if tc.flip {
				// Once: a stream is not fetched again (its bytes are out), so
				// one damaged body is enough to fail it.
				faults = s3emu.NewFaults(s3emu.Rule{Key: key, Range: "bytes=1048576-2097151", Action: s3emu.Flip{At: 4242}})
			}
			ts := s3emu.NewTestServer(t, s3emu.Options{Dataset: fmt.Sprintf("p:1:%d", size), NoChecksums: true, Faults: faults})
			args := append([]string{tc.args[0], "--endpoint-url", ts.URL, "--region", "us-east-1", "--no-sign-request", "--quiet",
				"--partsize", "1MiB", "--multipart-threshold", "1MiB"}, tc.args[1:]...)
			r := run(t, nil, args...)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d\n%s", r.code, tc.code, r.stderr)

			}
			if tc.code == 1 {
				line := fmt.Sprintf("the %d bytes written to stdout are wrong", size)
				if strings.Count(r.stderr, line) == 0 {
					t.Errorf("stderr does not say %q:\n%s", line, r.stderr)
				}
				return
			}
			if !tc.flip && sum([]byte(r.stdout)) != sum(want) {
				t.Errorf("stdout: %d bytes, not the object", len(r.stdout))
			}
			var o map[string]any
			for _, l := range strings.Split(r.stderr, "\n") {
				if strings.Contains(l, `"type":"object"`) {
					json.Unmarshal([]byte(l), &o)
				}
			}
			if o["verification"] != tc.verify {
				t.Errorf("object line %v, want verification %q", o, tc.verify)
			}
			if tc.verify == "verified" && fmt.Sprint(o["checksums"]) != "[md5]" {
				t.Errorf("checksums %v, want [md5]", o["checksums"])
			}
		})
	}
	// A file can be read back: under auto it is not (md5-only), as before.
	ts := s3emu.NewTestServer(t, s3emu.Options{Dataset: fmt.Sprintf("p:1:%d", size), NoChecksums: true})
	r := run(t, nil, "get", "--endpoint-url", ts.URL, "--region", "us-east-1", "--no-sign-request", "--quiet", "--json", url, filepath.Join(t.TempDir(), "f"))
	if r.code != 0 || !strings.Contains(r.stdout, `"unverified":"md5-only"`) {
		t.Errorf("file under auto: exit %d, want 0 and md5-only\n%s", r.code, r.stdout)
	}
}

// TestMissingKeyIsNoSuchKey: cat, get - and ls of a key that names no
// object and nothing under it fail with "no such key", exit 1 (the AWS
// CLI and s5cmd exit 1 too), and get --json names the destination it was
// given (stdout, "-"). A key with objects under it is still a prefix,
// which a stream cannot take (exit 2).
func TestMissingKeyIsNoSuchKey(t *testing.T) {
	s := emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory})
	s.put(t, "d/a", []byte("a"))
	for _, args := range [][]string{
		{"cat", s.url("nope")},
		{"get", s.url("nope"), "-"},
		{"get", "--json", s.url("d/nope"), "-"},
		{"ls", s.url("nope")},
		{"ls", "--json", s.url("d/nope")},
		{"ls", s.url("nope/")},
	} {
		r := run(t, nil, s.cmd(args[0], args[1:]...)...)
		if r.code != 1 || !strings.Contains(r.stderr, "no such key") || strings.Contains(r.stderr, "is a prefix") {
			t.Errorf("%q: exit %d, stderr %q; want exit 1 and \"no such key\"", args, r.code, r.stderr)
		}
		if args[0] == "get" && args[1] == "--json" {
			if !strings.Contains(r.stderr, `"destination":"-"`) {
				t.Errorf("%q: the object line does not name destination \"-\":\n%s", args, r.stderr)
			}
		}
	}
	// Into a file: the object line names the file it would have been.
	file := filepath.Join(t.TempDir(), "out.bin")
	r := run(t, nil, s.cmd("get", "--json", s.url("d/nope"), file)...)
	if want := fmt.Sprintf(`"destination":%q`, file); r.code != 1 || !strings.Contains(r.stdout, want) {
		t.Errorf("get --json of a missing key into %s: exit %d, want 1 and %s:\n%s", file, r.code, want, r.stdout)
	}
	for _, args := range [][]string{{"cat", s.url("d")}, {"get", s.url("d"), "-"}} {
		// cat has no DEST: the line says standard output, and what to
		// run for a prefix.
		if r := run(t, nil, s.cmd(args[0], args[1:]...)...); r.code != 2 || !strings.Contains(r.stderr, "is a prefix, and standard output (cat, or DEST -) takes a single object: s3pd ls") {
			t.Errorf("%q: exit %d, stderr %q; want exit 2, a prefix", args, r.code, r.stderr)
		}
	}
	if r := run(t, nil, s.cmd("ls", s.url(""))...); r.code != 0 {
		t.Errorf("ls of the bucket: exit %d, want 0\n%s", r.code, r.stderr)
	}
}
