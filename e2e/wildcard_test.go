package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/s3pd/s3pd/pkg/s3emu"
)

// TestWildcardKeys: "*" and "?" in a source key select objects under the
// prefix before them, matching across "/" as the AWS CLI's --include does;
// --raw takes the key literally.
func TestWildcardKeys(t *testing.T) {
	s := emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory})
	objects := map[string][]byte{}
	for i, k := range []string{"m/a.safetensors", "m/sub/b.safetensors", "m/config.json",
		"m/model-1.bin", "m/model-2.bin", "m/model-10.bin", "lit/a*b", "lit/aXb"} {
		objects[k] = randomBytes(uint64(50+i), 1000+i)
		s.put(t, k, objects[k])
	}
	pick := func(names ...string) map[string][]byte {
		out := map[string][]byte{}
		for _, n := range names {
			out[n] = objects["m/"+n]
		}
		return out
	}
	tests := []struct {
		name string
		args []string
		want map[string][]byte
	}{
		{"*.safetensors across /", []string{s.url("m/*.safetensors")}, pick("a.safetensors", "sub/b.safetensors")},
		{"model-*", []string{s.url("m/model-*")}, pick("model-1.bin", "model-2.bin", "model-10.bin")},
		{"?", []string{s.url("m/model-?.bin")}, pick("model-1.bin", "model-2.bin")},
		{"pattern then --exclude", []string{"--exclude", "sub/*", s.url("m/*.safetensors")}, pick("a.safetensors")},
		{"trailing /*", []string{s.url("m/*")}, pick("a.safetensors", "sub/b.safetensors", "config.json", "model-1.bin", "model-2.bin", "model-10.bin")},
		{"--raw", []string{"--raw", s.url("lit/a*b")}, map[string][]byte{"a*b": objects["lit/a*b"]}},
		{"wildcard matches both", []string{s.url("lit/a*b")}, map[string][]byte{"a*b": objects["lit/a*b"], "aXb": objects["lit/aXb"]}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dest := t.TempDir()
			r := run(t, nil, append(s.cmd("get"), append(tt.args, dest)...)...)
			if r.code != 0 {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
			}
			sameTree(t, dest, tt.want)
		})
	}
	t.Run("--delete keeps files the pattern does not match", func(t *testing.T) {
		dest := t.TempDir()
		for _, n := range []string{"keep.txt", "gone.safetensors"} {
			if err := os.WriteFile(filepath.Join(dest, n), []byte("old"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		r := run(t, nil, s.cmd("get", "--delete", s.url("m/*.safetensors"), dest)...)
		if r.code != 0 {
			t.Fatalf("exit %d\n%s", r.code, r.stderr)
		}
		want := pick("a.safetensors", "sub/b.safetensors")
		want["keep.txt"] = []byte("old")
		sameTree(t, dest, want)
	})
}
