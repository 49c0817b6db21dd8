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

// writeFiles creates files under dir and returns dir.
func writeFiles(t *testing.T, dir string, files map[string][]byte) string {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestCopyBinaryEveryDirection runs the built binary local to local,
// local to S3, S3 to S3 and S3 to local, and checks every byte of every
// copy, with parts of exactly the part size and one byte more.
func TestCopyBinaryEveryDirection(t *testing.T) {
	want := map[string][]byte{
		"empty":          {},
		"one":            {42},
		"exact-3-parts":  randomBytes(1, 3*mib),
		"3-parts-plus-1": randomBytes(2, 3*mib+1),
		"a/b/nested":     randomBytes(3, 100_000),
	}
	src := writeFiles(t, t.TempDir(), want)
	s := emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory, Buckets: []string{"copy-dst"}})
	flags := []string{"--partsize", "1MiB", "--multipart-threshold", "1MiB", "--threads", "4", "--workers", "3"}

	local := filepath.Join(t.TempDir(), "local")
	if r := run(t, nil, append(append([]string{"copy", "--quiet"}, flags...), src, local)...); r.code != 0 {
		t.Fatalf("local to local: exit %d\n%s", r.code, r.stderr)
	}
	sameTree(t, local, want)

	steps := [][]string{
		s.cmd("copy", append(flags, src, s.url("up"))...),
		s.cmd("copy", append(flags, "--copy-threshold", "1MiB", s.url("up/"), "s3://copy-dst/copied/")...),
	}
	for _, args := range steps {
		if r := run(t, nil, args...); r.code != 0 {
			t.Fatalf("%v: exit %d\n%s", args, r.code, r.stderr)
		}
	}
	out, err := s.client.ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{Bucket: aws.String(s.bucket)})
	if err == nil && len(out.Uploads) != 0 {
		t.Errorf("incomplete uploads: got %d, want 0", len(out.Uploads))
	}
	for _, url := range []string{s.url("up/"), "s3://copy-dst/copied/"} {
		dest := t.TempDir()
		if r := run(t, nil, s.cmd("copy", append(flags, url, dest)...)...); r.code != 0 {
			t.Fatalf("copy %s to local: exit %d\n%s", url, r.code, r.stderr)
		}
		sameTree(t, dest, want)
	}
	// A rerun of the upload skips every object.
	r := run(t, nil, s.cmd("copy", append(flags, src, s.url("up"))...)...)
	if r.code != 0 || !strings.Contains(r.stdout, "0 transferred, 5 skipped") {
		t.Errorf("upload rerun: exit %d, stdout %q, want 5 skipped", r.code, r.stdout)
	}
}

func TestCopyBinaryBadInput(t *testing.T) {
	src := writeFiles(t, t.TempDir(), map[string][]byte{"f": []byte("x")})
	for _, args := range [][]string{
		{"copy", src, src},
		{"copy", src, filepath.Join(src, "inside")},
		{"copy", filepath.Join(src, "missing"), t.TempDir()},
	} {
		r := run(t, nil, args...)
		if r.code != 2 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q, want 2 and one line", args, r.code, r.stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(src, "inside")); !os.IsNotExist(err) {
		t.Errorf("a refused copy created its destination")
	}
}

// TestCopySummaryAdviceFitsDirection: local files carry no checksum, so a
// local copy is reported unverified, saying why; an upload is verified
// by the checksum the destination reports of what it stored, not
// "verified: 0"; never "upload them with a checksum", which is for
// objects already in S3.
func TestCopySummaryAdviceFitsDirection(t *testing.T) {
	src := writeFiles(t, t.TempDir(), map[string][]byte{"f": randomBytes(4, 1000)})
	s := emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory})
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"local to local", []string{"copy", src, filepath.Join(t.TempDir(), "copy")},
			"1 no-checksum: local files carry no checksum to check the copy against"},
		{"local to S3", s.cmd("copy", src, s.url("up/")),
			"verified: 1 object (1000 B) by crc64nvme 1, the destination's checksum of what it stored"},
	} {
		r := run(t, nil, tt.args...)
		if r.code != 0 {
			t.Fatalf("%s: exit %d\n%s", tt.name, r.code, r.stderr)
		}
		if !strings.Contains(r.stdout, tt.want) || strings.Contains(r.stdout, "upload them with a checksum") || strings.Contains(r.stdout, "verified: 0") {
			t.Errorf("%s: summary\n%s\nwant the advice %q", tt.name, r.stdout, tt.want)
		}
	}
}
