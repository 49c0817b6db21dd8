package cmd

import (
	"bytes"
	"context"
	"crypto/sha256"
	"github.com/s3pd/s3pd/internal/unpriv"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/spf13/cobra"

	"github.com/s3pd/s3pd/pkg/s3emu"
)

// copyEnv isolates a copy run from the machine's configuration.
func copyEnv(t *testing.T) *Factory {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(home, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(home, "credentials"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	for _, k := range os.Environ() {
		if name, _, _ := strings.Cut(k, "="); strings.HasPrefix(name, "S3PD_") || name == "AWS_PROFILE" {
			t.Setenv(name, "")
		}
	}
	return &Factory{IO: &IOStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}, Getenv: os.Getenv}
}

// runCopyArgs runs `s3pd copy args...` and returns its exit code and output.
func runCopyArgs(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	f := copyEnv(t)
	c := NewCmdCopy(f, nil)
	c.SilenceUsage, c.SilenceErrors = true, true
	c.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError(err) })
	c.SetArgs(append([]string{"--no-progress"}, args...))
	c.SetOut(f.IO.Out)
	c.SetErr(f.IO.ErrOut)
	err := c.ExecuteContext(context.Background())
	stderr := f.IO.ErrOut.(*bytes.Buffer).String()
	if err != nil {
		stderr += "s3pd: " + oneLine(err.Error()) + "\n"
	}
	return exitCode(err), f.IO.Out.(*bytes.Buffer).String(), stderr
}

func randBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, uint64(n)))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// testTree is a source tree: sizes around a 64 KiB part.
func testTree(t *testing.T) (string, map[string][]byte) {
	t.Helper()
	const part = 64 << 10
	want := map[string][]byte{
		"empty": {}, "one": {1}, "part": randBytes(part, 1), "part+1": randBytes(part+1, 2),
		"d/e/three-parts": randBytes(3*part, 3), "d/below": randBytes(part-1, 4),
	}
	dir := t.TempDir()
	for name, data := range want {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, data, 0o640); err != nil {
			t.Fatal(err)
		}
	}
	return dir, want
}

// sameFiles checks that dir holds exactly want, byte for byte.
func sameFiles(t *testing.T, dir string, want map[string][]byte) {
	t.Helper()
	got := map[string][32]byte{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			b, _ := os.ReadFile(p)
			rel, _ := filepath.Rel(dir, p)
			got[filepath.ToSlash(rel)] = sha256.Sum256(b)
		}
		return nil
	})
	if len(got) != len(want) {
		t.Errorf("%s holds %d files, want %d", dir, len(got), len(want))
	}
	for name, data := range want {
		if h, ok := got[name]; !ok || h != sha256.Sum256(data) {
			t.Errorf("%s/%s: missing or different", dir, name)
		}
	}
}

func TestCopyLocalToLocal(t *testing.T) {
	src, want := testTree(t)
	mtime := time.Date(2021, 5, 6, 7, 8, 9, 0, time.UTC)
	os.Chtimes(filepath.Join(src, "part"), mtime, mtime)
	os.Chmod(filepath.Join(src, "one"), 0o751)
	os.Symlink("one", filepath.Join(src, "link"))
	dst := filepath.Join(t.TempDir(), "out")
	code, out, stderr := runCopyArgs(t, "--no-follow-symlinks", "--partsize", "64KiB", "--multipart-threshold", "64KiB", src, dst)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	sameFiles(t, dst, want)
	if st, _ := os.Stat(filepath.Join(dst, "part")); !st.ModTime().Equal(mtime) {
		t.Errorf("mtime: got %v, want %v", st.ModTime(), mtime)
	}
	if st, _ := os.Stat(filepath.Join(dst, "one")); st.Mode().Perm() != 0o751 {
		t.Errorf("mode: got %v, want 0751", st.Mode().Perm())
	}
	if !strings.Contains(stderr, "link") || !strings.Contains(stderr, "symbolic link not followed") {
		t.Errorf("stderr does not report the symlink:\n%s", stderr)
	}
	if !strings.Contains(out, "objects: 6 transferred") {
		t.Errorf("summary: got %q, want 6 transferred", out)
	}
	_, out, _ = runCopyArgs(t, "--no-follow-symlinks", src, dst)
	if !strings.Contains(out, "0 transferred, 6 skipped") {
		t.Errorf("rerun: got %q, want 6 skipped", out)
	}
	_, out, _ = runCopyArgs(t, "--overwrite", src, dst)
	if !strings.Contains(out, "7 transferred") {
		t.Errorf("--overwrite, links followed by default: got %q, want 7 transferred", out)
	}
	// A single file into a directory, and to a new name.
	for _, tt := range []struct{ dst, want string }{{dst + "/", "part"}, {filepath.Join(dst, "renamed"), "renamed"}} {
		if code, _, stderr := runCopyArgs(t, filepath.Join(src, "part"), tt.dst); code != 0 {
			t.Fatalf("single file to %s: exit %d: %s", tt.dst, code, stderr)
		}
		if b, _ := os.ReadFile(filepath.Join(dst, tt.want)); !bytes.Equal(b, want["part"]) {
			t.Errorf("single file at %s differs", tt.want)
		}
	}
}

func TestCopyBadInput(t *testing.T) {
	src, _ := testTree(t)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"same", []string{src, src}, "are the same"},
		{"same through a trailing slash", []string{src, src + "/"}, "are the same"},
		{"inside", []string{src, filepath.Join(src, "d", "sub")}, "inside source"},
		{"missing", []string{filepath.Join(src, "nope"), t.TempDir()}, "no such file"},
		{"one argument", []string{src}, "takes SRC and DEST"},
		{"bad checksum", []string{"--checksum-algorithm", "MD5", src, t.TempDir()}, "CRC64NVME or CRC32C"},
		{"source flags on a local copy", []string{"--source-region", "eu-west-1", src, t.TempDir()}, "S3 to S3"},
		{"same bucket prefix", []string{"s3://b-1/p/", "s3://b-1/p/q/"}, "inside source"},
		{"same object", []string{"s3://b-1/k", "s3://b-1/k"}, "are the same"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runCopyArgs(t, tt.args...)
			if code != ExitUsage || !strings.Contains(stderr, tt.want) {
				t.Errorf("got exit %d, stderr %q, want exit 2 and %q", code, stderr, tt.want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(src, "d", "sub")); !os.IsNotExist(err) {
		t.Errorf("a refused copy created its destination: %v", err)
	}
}

func TestCopyUnreadable(t *testing.T) {
	if unpriv.Rerun(t) { // root reads every file: run as nobody
		return
	}
	src, _ := testTree(t)
	os.Chmod(filepath.Join(src, "one"), 0)
	dst := t.TempDir()
	code, _, stderr := runCopyArgs(t, src, dst)
	if code != ExitFailed || !strings.Contains(stderr, "permission denied") {
		t.Errorf("got exit %d, stderr %q, want 1 and permission denied", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dst, "one")); !os.IsNotExist(err) {
		t.Errorf("unreadable file at its final name: %v", err)
	}
	if code, _, stderr := runCopyArgs(t, filepath.Join(src, "one"), dst); code != ExitUsage {
		t.Errorf("unreadable single file: got exit %d (%s), want 2", code, stderr)
	}
}

// emu starts an in-memory emulator with buckets b-1 and b-2.
func emu(t *testing.T) (string, *s3.Client) {
	t.Helper()
	ep := s3emu.NewTestServer(t, s3emu.Options{Backend: s3emu.BackendMemory, Buckets: []string{"b-1", "b-2"}}).URL
	return ep, s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(ep), UsePathStyle: true,
		Credentials: aws.AnonymousCredentials{}, HTTPClient: awshttp.NewBuildableClient()})
}

func noPendingUploads(t *testing.T, c *s3.Client, bucket string) {
	t.Helper()
	out, err := c.ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket)})
	if err == nil && len(out.Uploads) > 0 {
		t.Errorf("%s: %d incomplete uploads left", bucket, len(out.Uploads))
	}
}

// TestCopyEveryDirection uploads a tree, copies it server-side and
// across stores, downloads every copy and checks every byte.
func TestCopyEveryDirection(t *testing.T) {
	src, want := testTree(t)
	ep1, c1 := emu(t)
	ep2, c2 := emu(t)
	at := func(ep string) []string {
		return []string{"--endpoint-url", ep, "--region", "us-east-1", "--no-sign-request", "--partsize", "64KiB", "--multipart-threshold", "64KiB"}
	}
	steps := []struct {
		name string
		args []string
		want string
	}{
		{"upload", append(at(ep1), src, "s3://b-1/up"), "6 transferred"},
		{"upload again skips", append(at(ep1), src, "s3://b-1/up/"), "0 transferred, 6 skipped"},
		{"server-side copy", append(at(ep1), "--copy-threshold", "64KiB", "s3://b-1/up/", "s3://b-2/copied/"), "6 transferred"},
		{"server-side copy again skips", append(at(ep1), "--copy-threshold", "64KiB", "s3://b-1/up/", "s3://b-2/copied/"), "6 skipped"},
		{"across stores", append(at(ep2), "--source-endpoint-url", ep1, "s3://b-2/copied", "s3://b-1/streamed"), "6 transferred"},
	}
	for _, s := range steps {
		code, out, stderr := runCopyArgs(t, s.args...)
		if code != 0 || !strings.Contains(out, s.want) {
			t.Fatalf("%s: exit %d, stdout %q, want 0 and %q\n%s", s.name, code, out, s.want, stderr)
		}
	}
	noPendingUploads(t, c1, "b-1")
	noPendingUploads(t, c1, "b-2")
	noPendingUploads(t, c2, "b-1")
	for _, d := range []struct{ ep, url string }{{ep1, "s3://b-1/up/"}, {ep1, "s3://b-2/copied/"}, {ep2, "s3://b-1/streamed/"}} {
		dst := t.TempDir()
		if code, _, stderr := runCopyArgs(t, append(at(d.ep), d.url, dst)...); code != 0 {
			t.Fatalf("download %s: exit %d\n%s", d.url, code, stderr)
		}
		sameFiles(t, dst, want)
	}
	// A single file to a key, and a single object copied server-side.
	code, _, stderr := runCopyArgs(t, append(at(ep1), filepath.Join(src, "part+1"), "s3://b-1/single/obj")...)
	if code != 0 {
		t.Fatalf("single upload: exit %d\n%s", code, stderr)
	}
	code, _, stderr = runCopyArgs(t, append(at(ep1), "--copy-threshold", "64KiB", "s3://b-1/single/obj", "s3://b-2/")...)
	if code != 0 {
		t.Fatalf("single server-side copy: exit %d\n%s", code, stderr)
	}
	out, err := c1.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("b-2"), Key: aws.String("obj")})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	b.ReadFrom(out.Body)
	out.Body.Close()
	if !bytes.Equal(b.Bytes(), want["part+1"]) {
		t.Errorf("single object copy differs")
	}
}
