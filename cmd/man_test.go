package cmd

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// writeManPages runs `s3pd man DIR` and returns DIR.
func writeManPages(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	if code := Execute(context.Background(), &IOStreams{Out: &out, ErrOut: &errOut}, "1.0.0", []string{"man", dir}); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	return dir
}

// TestManPageGolden: s3pd-du.1 is the golden page (go test ./cmd/
// -run TestManPageGolden -update rewrites it).
func TestManPageGolden(t *testing.T) {
	got, err := os.ReadFile(filepath.Join(writeManPages(t), "s3pd-du.1"))
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "s3pd-du.1.golden")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("s3pd-du.1 differs from %s (rerun with -update if the change is meant):\n%s", golden, got)
	}
}

// TestManPagesKeepMarkup: what Markdown would take for emphasis or HTML
// ("*" and "<...>") reaches the pages as --help shows it.
func TestManPagesKeepMarkup(t *testing.T) {
	dir := writeManPages(t)
	tests := []struct{ page, want string }{
		{"s3pd-get.1", `A key with "*" or "?" is a pattern`},
		{"s3pd-get.1", `s3://b/m/*.safetensors is --exclude "*" --include "*.safetensors" under m/`},
		{"s3pd-get.1", `DEST/<basename>`},
		{"s3pd-du.1", `A key with "*" or "?" counts only`},
		{"s3pd-cat.1", `("*" and "?" are not wildcards)`},
	}
	for _, tt := range tests {
		b, err := os.ReadFile(filepath.Join(dir, tt.page))
		if err != nil {
			t.Fatal(err)
		}
		// \& is roff's zero-width space, which md2man puts before "."; a
		// reader sees the text without it, on lines joined by spaces.
		text := strings.Join(strings.Fields(strings.ReplaceAll(string(b), `\&`, "")), " ")
		if !strings.Contains(text, tt.want) {
			t.Errorf("%s lacks %q", tt.page, tt.want)
		}
	}
}
