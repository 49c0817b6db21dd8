package local

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

func TestRelPath(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"a", true},
		{"a/b/c.bin", true},
		{"a..b", true},
		{"..a/b..", true},
		{"", false},
		{"/etc/passwd", false},
		{"..", false},
		{"../x", false},
		{"a/../../x", false},
		{"a/..", false},
		{"a/./b", false},
		{"a//b", false},
		{"a/", false},
		{"a\x00b", false},
		{strings.Repeat("x", 255), true},
		{strings.Repeat("x", 256), false},
		{"d/" + strings.Repeat("x", 256) + "/f", false},
	}
	for _, tt := range tests {
		got, err := RelPath(tt.name)
		if (err == nil) != tt.ok {
			t.Errorf("RelPath(%q) error %v, want ok=%v", tt.name, err, tt.ok)
		}
		if err != nil && !errors.Is(err, ErrUnsafeName) {
			t.Errorf("RelPath(%q) error %v is not ErrUnsafeName", tt.name, err)
		}
		if err == nil && got != tt.name {
			t.Errorf("RelPath(%q) = %q, want it unchanged", tt.name, got)
		}
	}
}

// FuzzRelPath checks that no accepted name leaves the root.
func FuzzRelPath(f *testing.F) {
	for _, s := range []string{"a", "a/b", "../x", "a/../../x", "/abs", "a..b", "a/./b", "x/", ".", "a\\..\\b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		rel, err := RelPath(name)
		if err != nil {
			return
		}
		root := "/dest"
		joined := filepath.Join(root, rel)
		if joined != root && !strings.HasPrefix(joined, root+"/") {
			t.Fatalf("RelPath(%q) = %q escapes the root: %s", name, rel, joined)
		}
		if filepath.Clean(rel) != rel {
			t.Fatalf("RelPath(%q) = %q is not clean", name, rel)
		}
		for _, c := range strings.Split(rel, "/") {
			if len(c) > maxNameLen || c == "" || c == "." || c == ".." {
				t.Fatalf("RelPath(%q) accepted component %q", name, c)
			}
		}
		if len(partialName(partialHash(rel), newRunID())) > maxNameLen {
			t.Fatalf("temp name of %q is too long", name)
		}
	})
}
