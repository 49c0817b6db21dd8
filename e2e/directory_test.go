package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3pd/s3pd/pkg/s3emu"
)

const dirBucket = "e2e--use1-az4--x-s3"

// dirStore is the emulator with a directory bucket whose sessions live
// lifetime, filled through an SDK client with its own S3 Express support.
func dirStore(t *testing.T, lifetime time.Duration) *store {
	t.Helper()
	ts := s3emu.NewTestServer(t, s3emu.Options{Backend: s3emu.BackendMemory, Buckets: []string{dirBucket}, SessionLifetime: lifetime})
	c := s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(ts.URL),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		HTTPClient:   awshttp.NewBuildableClient(),
	})
	return &store{name: "emulator", endpoint: ts.URL, bucket: dirBucket, client: c, emu: ts.Server, signed: true}
}

// dirData puts a small tree into s and returns it.
func dirData(t *testing.T, s *store) map[string][]byte {
	want := map[string][]byte{
		"a/one":          randomBytes(1, 3*mib+5),
		"a/two":          randomBytes(2, 100_000),
		"a/b/three":      randomBytes(3, 10),
		"odd key+&<'%\"": randomBytes(4, mib),
		"empty":          {},
	}
	for k, v := range want {
		s.put(t, "data/"+k, v)
	}
	s.put(t, "other/outside", []byte("x"))
	return want
}

func TestDirectoryBucketGet(t *testing.T) {
	s := dirStore(t, 0)
	want := dirData(t, s)
	before := s.emu.SessionsCreated()
	dest := t.TempDir()
	r := run(t, nil, s.cmd("get", "--partsize", "1MiB", "--threads", "4", s.url("data/"), dest)...)
	if r.code != 0 {
		t.Fatalf("get: exit %d\n%s", r.code, r.stderr)
	}
	sameTree(t, dest, want)
	if n := s.emu.SessionsCreated() - before; n != 1 {
		t.Errorf("%d sessions created, want 1 for the run", n)
	}
}

// TestDirectoryBucketCommands runs cat, ls, du and copy both ways on a
// directory bucket.
func TestDirectoryBucketCommands(t *testing.T) {
	s := dirStore(t, 0)
	want := dirData(t, s)
	r := run(t, nil, s.cmd("cat", s.url("data/a/two"))...)
	if r.code != 0 || r.stdout != string(want["a/two"]) {
		t.Fatalf("cat: exit %d, %d bytes, want %d\n%s", r.code, len(r.stdout), len(want["a/two"]), r.stderr)
	}
	r = run(t, nil, s.cmd("ls", "--recursive", s.url("data/"))...)
	if r.code != 0 {
		t.Fatalf("ls: exit %d\n%s", r.code, r.stderr)
	}
	var keys []string
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		f := strings.Fields(line)
		keys = append(keys, strings.Join(f[3:], " "))
	}
	if !slices.IsSorted(keys) || len(keys) != len(want) {
		t.Errorf("ls --recursive: %q, want the %d keys sorted", keys, len(want))
	}
	r = run(t, nil, s.cmd("du", s.url("data/"))...)
	var total int
	for _, v := range want {
		total += len(v)
	}
	if r.code != 0 || !strings.Contains(r.stdout, fmt.Sprint(total)) {
		t.Errorf("du: exit %d, %q, want %d bytes\n%s", r.code, r.stdout, total, r.stderr)
	}
	down := t.TempDir()
	r = run(t, nil, s.cmd("copy", "--partsize", "1MiB", s.url("data/"), down)...)
	if r.code != 0 {
		t.Fatalf("copy down: exit %d\n%s", r.code, r.stderr)
	}
	sameTree(t, down, want)
	r = run(t, nil, s.cmd("copy", "--partsize", "1MiB", "--multipart-threshold", "1MiB", down, s.url("up/"))...)
	if r.code != 0 {
		t.Fatalf("copy up: exit %d\n%s", r.code, r.stderr)
	}
	back := t.TempDir()
	r = run(t, nil, s.cmd("get", s.url("up/"), back)...)
	if r.code != 0 {
		t.Fatalf("get what was copied up: exit %d\n%s", r.code, r.stderr)
	}
	sameTree(t, back, want)
}
