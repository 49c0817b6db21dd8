package job

import "testing"

// TestLand: where a prefix and a single object land, for a local path
// or an S3 key as DEST, named or as a directory.
func TestLand(t *testing.T) {
	for _, tt := range []struct {
		single         bool
		src, dest      string
		dir            bool
		wantRoot, want string
	}{
		{false, "data/", "out", false, "out", ""},
		{false, "data/", "out/", true, "out/", ""},
		{true, "m/model.bin", "out", true, "out", "model.bin"},
		{true, "m/model.bin", "out/x.bin", false, "out", "x.bin"},
		{true, "m/model.bin", "x.bin", false, ".", "x.bin"},
		{true, "m/model.bin", "/x.bin", false, "/", "x.bin"},
		{true, "model.bin", "a/b/c", false, "a/b", "c"},
	} {
		root, name := Land(tt.single, tt.src, tt.dest, tt.dir)
		if root != tt.wantRoot || name != tt.want {
			t.Errorf("Land(%v, %q, %q, %v) = %q, %q; want %q, %q", tt.single, tt.src, tt.dest, tt.dir, root, name, tt.wantRoot, tt.want)
		}
	}
}
