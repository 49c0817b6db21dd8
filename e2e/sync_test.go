package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3pd/s3pd/pkg/s3emu"
)

func TestSyncDeleteDryRunAndMarkers(t *testing.T) {
	s := emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory})
	files := map[string][]byte{"a": randomBytes(1, 1000), "d/b": randomBytes(2, 2000), "keep.log": randomBytes(3, 10)}
	for k, v := range files {
		s.put(t, "p/"+k, v)
	}
	s.put(t, "p/empty-dir/", nil) // a directory marker
	dest := t.TempDir()

	// A dry run lists and fetches nothing.
	r := run(t, nil, s.cmd("get", "--dry-run", s.url("p/"), dest)...)
	if r.code != 0 || !strings.Contains(r.stdout, "would fetch: p/a -> "+filepath.Join(dest, "a")+" (1000 bytes)") || !strings.Contains(r.stdout, "would fetch 3 objects (2.94 KiB)") {
		t.Fatalf("dry run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if entries, _ := os.ReadDir(dest); len(entries) != 0 {
		t.Fatalf("a dry run wrote %v", entries)
	}

	r = run(t, nil, s.cmd("get", s.url("p/"), dest)...)
	if r.code != 0 {
		t.Fatalf("get: exit %d\n%s", r.code, r.stderr)
	}
	if st, err := os.Stat(filepath.Join(dest, "empty-dir")); err != nil || !st.IsDir() {
		t.Fatalf("the directory marker did not create its directory: %v", err)
	}
	sameTree(t, dest, files)

	// The object a is deleted remotely; stray files appear locally.
	if _, err := s.client.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: aws.String("p/a")}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dest, "stray"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(dest, "stray.log"), []byte("x"), 0o644)

	r = run(t, nil, s.cmd("get", "--delete", "--dry-run", "--exclude", "*.log", s.url("p/"), dest)...)
	if r.code != 0 || !strings.Contains(r.stdout, "would delete: a (1000 bytes)") || !strings.Contains(r.stdout, "would delete: stray (1 byte)") || strings.Contains(r.stdout, "stray.log") {
		t.Fatalf("delete dry run: exit %d\n%s", r.code, r.stdout)
	}
	if _, err := os.Stat(filepath.Join(dest, "a")); err != nil {
		t.Fatalf("a dry run deleted a file: %v", err)
	}
	// What it skips is one line, not one per file.
	if n := strings.Count(r.stdout, "would skip"); n != 1 || !strings.Contains(r.stdout, "would skip: 2 objects: ") || strings.Contains(r.stdout, "((") {
		t.Errorf("delete dry run: %d lines of skips, want one summing them up:\n%s", n, r.stdout)
	}
	r = run(t, nil, s.cmd("get", "--delete", "--exclude", "*.log", s.url("p/"), dest)...)
	if r.code != 0 || !strings.Contains(r.stdout, "deleted: 2 files") {
		t.Fatalf("delete: exit %d\n%s", r.code, r.stdout)
	}
	delete(files, "a")
	files["stray.log"] = []byte("x") // excluded names are never deleted
	sameTree(t, dest, files)
}

func TestNoClobberKeepsExistingFiles(t *testing.T) {
	s := emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory})
	s.put(t, "p/a", []byte("new"))
	dest := t.TempDir()
	os.WriteFile(filepath.Join(dest, "a"), []byte("old"), 0o644)
	r := run(t, nil, s.cmd("get", "--no-clobber", s.url("p/"), dest)...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if got, _ := os.ReadFile(filepath.Join(dest, "a")); string(got) != "old" {
		t.Fatalf("--no-clobber replaced a file: %q", got)
	}
	r = run(t, nil, s.cmd("get", "--overwrite", s.url("p/"), dest)...)
	if got, _ := os.ReadFile(filepath.Join(dest, "a")); r.code != 0 || string(got) != "new" {
		t.Fatalf("--overwrite: exit %d, content %q", r.code, got)
	}
}
