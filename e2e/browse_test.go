package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/s3pd/s3pd/pkg/s3emu"
)

// browseStore holds a small tree for ls, du and cat.
func browseStore(t *testing.T) (*store, map[string][]byte) {
	s := emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory})
	objects := map[string][]byte{
		"m/a.safetensors":     randomBytes(61, 1500),
		"m/sub/b.safetensors": randomBytes(62, 2<<20),
		"m/config.json":       []byte(`{"x":1}`),
		"m.txt":               []byte("top"),
		"other/z":             []byte("z"),
	}
	for k, v := range objects {
		s.put(t, k, v)
	}
	return s, objects
}

func TestLs(t *testing.T) {
	s, _ := browseStore(t)
	tests := []struct {
		name  string
		args  []string
		lines []string // each a suffix of one output line, in order
	}{
		// As the AWS CLI: a page's PRE lines first, then its objects.
		{"one level", []string{s.url("m/")}, []string{"PRE sub/", "1500 a.safetensors", "7 config.json"}},
		{"prefix as given", []string{s.url("m")}, []string{"PRE m/", "3 m.txt"}},
		{"recursive", []string{"--recursive", s.url("m/")}, []string{"1500 m/a.safetensors", "7 m/config.json", "2097152 m/sub/b.safetensors"}},
		// Sizes as the AWS CLI writes them with --human-readable.
		{"summarize, human", []string{"-r", "-H", "--summarize", s.url("m/")}, []string{" 1.5 KiB m/a.safetensors", " 7 Bytes m/config.json", " 2.0 MiB m/sub/b.safetensors", "", "Total Objects: 3", "Total Size: 2.0 MiB"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, nil, s.cmd("ls", tt.args...)...)
			if r.code != 0 {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
			}
			got := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
			if len(got) != len(tt.lines) {
				t.Fatalf("got %d lines, want %d:\n%s", len(got), len(tt.lines), r.stdout)
			}
			for i, want := range tt.lines {
				if !strings.HasSuffix(got[i], want) {
					t.Errorf("line %d: %q does not end in %q", i, got[i], want)
				}
			}
		})
	}
	t.Run("buckets", func(t *testing.T) {
		r := run(t, nil, s.cmd("ls")...)
		if r.code != 0 || !strings.HasSuffix(strings.TrimSpace(r.stdout), " "+s.bucket) {
			t.Fatalf("exit %d, stdout %q, want a line ending in the bucket %s\n%s", r.code, r.stdout, s.bucket, r.stderr)
		}
	})
	t.Run("json", func(t *testing.T) {
		r := run(t, nil, s.cmd("ls", "--json", s.url("m/"))...)
		if r.code != 0 {
			t.Fatalf("exit %d\n%s", r.code, r.stderr)
		}
		var types []string
		for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
			var v struct {
				Schema, Type, Kind, Key string
				Size                    *int64
				Bytes, Objects          int64
			}
			if err := json.Unmarshal([]byte(l), &v); err != nil {
				t.Fatalf("%q: %v", l, err)
			}
			if v.Schema != "s3pd/1" {
				t.Errorf("%q: schema %q", l, v.Schema)
			}
			types = append(types, v.Type+":"+v.Kind+":"+v.Key)
			if v.Type == "usage" && (v.Objects != 2 || v.Bytes != 1507) {
				t.Errorf("usage %+v, want 2 objects, 1507 bytes", v)
			}
			if v.Kind == "object" && (v.Size == nil || *v.Size <= 0) {
				t.Errorf("%q: no size", l)
			}
		}
		if got, want := strings.Join(types, " "), "entry:object:m/a.safetensors entry:object:m/config.json entry:prefix:m/sub/ usage::"; got != want {
			t.Errorf("got %s, want %s", got, want)
		}
	})
}

func TestDu(t *testing.T) {
	s, _ := browseStore(t)
	tests := []struct {
		url            string
		flags          []string
		objects, bytes int64
	}{
		{s.url("m/"), nil, 3, 1500 + 2<<20 + 7},
		{s.url("m"), nil, 4, 1500 + 2<<20 + 7 + 3}, // as given: m.txt too
		{s.url("m/*.safetensors"), nil, 2, 1500 + 2<<20},
		{s.url("m/"), []string{"--exclude", "sub/*"}, 2, 1507},
		{s.url("m.txt"), nil, 1, 3},
		{s.url("none/"), nil, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.url+strings.Join(tt.flags, ""), func(t *testing.T) {
			r := run(t, nil, s.cmd("du", append(append([]string{"--json"}, tt.flags...), tt.url)...)...)
			if r.code != 0 {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
			}
			var v struct {
				Type           string
				Objects, Bytes int64
			}
			if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || v.Type != "usage" || v.Objects != tt.objects || v.Bytes != tt.bytes {
				t.Errorf("got %q (%v), want %d objects, %d bytes", r.stdout, err, tt.objects, tt.bytes)
			}
		})
	}
	r := run(t, nil, s.cmd("du", s.url("m/"))...)
	if want := "3 objects, 2.0 MiB (2098659 bytes)\t" + s.url("m/"); strings.TrimSpace(r.stdout) != want {
		t.Errorf("got %q, want %q", r.stdout, want)
	}
	// s5cmd's du -H: binary units only.
	r = run(t, nil, s.cmd("du", "-H", s.url("m/"))...)
	if want := "3 objects, 2.0 MiB\t" + s.url("m/"); r.code != 0 || strings.TrimSpace(r.stdout) != want {
		t.Errorf("du -H: exit %d, got %q, want %q", r.code, r.stdout, want)
	}
}

func TestCat(t *testing.T) {
	s, objects := browseStore(t)
	r := run(t, nil, s.cmd("cat", "--partsize", "256KiB", s.url("m/sub/b.safetensors"))...)
	if r.code != 0 || r.stdout != string(objects["m/sub/b.safetensors"]) || r.stderr != "" {
		t.Fatalf("exit %d, stdout %d bytes (want %d), stderr %q", r.code, len(r.stdout), len(objects["m/sub/b.safetensors"]), r.stderr)
	}
	if r := run(t, nil, s.cmd("cat", s.url("m/"))...); r.code != 2 || r.stdout != "" {
		t.Errorf("cat of a prefix: exit %d, stdout %q, want 2 and nothing", r.code, r.stdout)
	}
	if r := run(t, nil, s.cmd("cat", s.url("m/missing"))...); r.code == 0 || r.stdout != "" {
		t.Errorf("cat of a missing key: exit %d, stdout %q", r.code, r.stdout)
	}
}

// TestBrowseErrorsRenderLikeGet: ls, du and cat say S3's answer as get
// does ("404 NoSuchBucket: ..."), in one line, not the SDK's chain of
// operation, status and request ID; on the emulator and on moto.
func TestBrowseErrorsRenderLikeGet(t *testing.T) {
	for _, s := range []*store{emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory}), motoStore(t)} {
		t.Run(s.name, func(t *testing.T) {
			const missing = "s3://no-such-bucket-s3pd/"
			for _, args := range [][]string{
				s.cmd("ls", missing),
				s.cmd("ls", "--recursive", missing+"p/"),
				s.cmd("du", missing),
				s.cmd("cat", missing+"k"),
				s.cmd("get", missing+"k", t.TempDir()),
			} {
				r := run(t, nil, args...)
				line := strings.TrimSpace(r.stderr)
				if r.code != 2 || strings.Count(line, "\n") > 0 || !strings.Contains(line, "404 NoSuchBucket: ") || strings.Contains(line, "operation error") {
					t.Errorf("%s: exit %d, stderr %q; want 2 and one line with 404 NoSuchBucket", args[0], r.code, r.stderr)
				}
			}
		})
	}
}
