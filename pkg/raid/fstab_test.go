package raid

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestFstabEdits(t *testing.T) {
	file := filepath.Join(t.TempDir(), "fstab")
	orig := "# /striped in a comment stays\nLABEL=root / ext4 defaults 0 1\nUUID=a\t/striped\txfs\tdefaults 0 0\nUUID=b /striped/sub xfs defaults 0 0\n/dev/x /mnt/my\\040disk ext4 defaults 0 0"
	if err := os.WriteFile(file, []byte(orig), 0o640); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		point, want string
	}{
		{"/striped", "UUID=a\t/striped\txfs\tdefaults 0 0"},
		{"/striped/", "UUID=a\t/striped\txfs\tdefaults 0 0"},
		{"/mnt/my disk", `/dev/x /mnt/my\040disk ext4 defaults 0 0`},
		{"/nothing", ""},
	}
	for _, tt := range tests {
		got, err := fstabEntry(file, filepath.Clean(tt.point))
		if err != nil || got != tt.want {
			t.Errorf("fstabEntry(%q): got %q, %v; want %q", tt.point, got, err, tt.want)
		}
	}
	removed, err := removeFstab(file, "/striped")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"UUID=a\t/striped\txfs\tdefaults 0 0"}; !slices.Equal(removed, want) {
		t.Errorf("removed %q, want %q", removed, want)
	}
	b, _ := os.ReadFile(file)
	want := "# /striped in a comment stays\nLABEL=root / ext4 defaults 0 1\nUUID=b /striped/sub xfs defaults 0 0\n/dev/x /mnt/my\\040disk ext4 defaults 0 0"
	if string(b) != want {
		t.Errorf("got %q, want %q", b, want)
	}
	if fi, _ := os.Stat(file); fi.Mode().Perm() != 0o640 {
		t.Errorf("got mode %v, want 0640 kept", fi.Mode().Perm())
	}
	if err := appendFstab(file, "UUID=c /c xfs defaults 0 0"); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(file)
	if string(b) != want+"\nUUID=c /c xfs defaults 0 0\n" {
		t.Errorf("after append got %q", b)
	}
	if removed, err := removeFstab(filepath.Join(t.TempDir(), "none"), "/c"); err != nil || removed != nil {
		t.Errorf("missing file: got %q, %v; want nothing", removed, err)
	}
	entries, _ := os.ReadDir(filepath.Dir(file))
	if len(entries) != 1 {
		t.Errorf("got %d files next to fstab, want no temporary file left", len(entries))
	}
}
