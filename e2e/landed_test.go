package e2e

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/s3pd/s3pd/pkg/s3emu"
)

// corrupting returns a store that reaches s through a proxy that adds
// bytes to the body of every PutObject and UploadPart and drops its
// checksum header: the server stores other bytes than were sent and
// notices nothing, as a store that keeps a body's aws-chunked framing
// does.
func corrupting(t *testing.T, s *store) *store {
	t.Helper()
	c := *s
	c.endpoint = s3emu.NewCorruptingProxy(t, s.endpoint, func(b []byte) []byte {
		b[len(b)/2] ^= 0x20
		return append(b, "\r\n0\r\n\r\n"...)
	})
	return &c
}

// gofakes3Store starts gofakes3 with its memory backend in this process:
// a store that checks no checksum and returns none.
func gofakes3Store(t *testing.T) *store {
	t.Helper()
	backend := s3mem.New()
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	t.Cleanup(srv.Close)
	return startedStore(t, "gofakes3", srv.URL)
}

// absent fails t if key holds an object in s.
func (s *store) absent(t *testing.T, key string) {
	t.Helper()
	if _, err := s.client.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)}); err == nil {
		t.Errorf("%s: an object is there, want none", s.url(key))
	}
}

// TestUploadsCheckWhatLanded: an upload the server stored other than it
// was sent fails, named, with exit 1, never "verified", and nothing
// stays at its key: from files (one PutObject, a multipart upload), from
// standard input, and streamed from another store.
func TestUploadsCheckWhatLanded(t *testing.T) {
	dst := emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory})
	bad := corrupting(t, dst)
	small, big := randomBytes(1, 1000), randomBytes(2, 12<<20)
	dir := writeFiles(t, t.TempDir(), map[string][]byte{"small": small, "big": big})
	src := emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory})
	src.put(t, "big", big)
	tests := []struct {
		name  string
		stdin []byte
		args  []string
		keys  []string
	}{
		{"files", nil, bad.cmd("copy", "--partsize", "5MiB", dir+"/", bad.url("up/")), []string{"up/small", "up/big"}},
		{"stdin put", small, bad.cmd("copy", "-", bad.url("in/small")), []string{"in/small"}},
		{"stdin multipart", big, bad.cmd("copy", "--partsize", "5MiB", "-", bad.url("in/big")), []string{"in/big"}},
		{"between stores", nil, bad.cmd("copy", "--partsize", "5MiB", "--source-endpoint-url", src.endpoint, src.url("big"), bad.url("x/big")), []string{"x/big"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runStdin(t, tt.stdin, tt.args...)
			if r.code != 1 || strings.Contains(r.stdout, "verified: ") || !strings.Contains(r.stderr, "checksum mismatch") {
				t.Errorf("exit %d, want 1, a mismatch named and no verified\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
			}
			for _, k := range tt.keys {
				if !strings.Contains(r.stdout+r.stderr, k) {
					t.Errorf("%s is not named:\n%s", k, r.stdout)
				}
				dst.absent(t, k)
			}
			if n := dst.pendingUploads(t); n != 0 {
				t.Errorf("%d multipart uploads left", n)
			}
		})
	}
}

// TestUploadSummarySaysWhatTheServerChecked: against the emulator, which
// keeps every object's checksum, an upload of a folder with empty files
// is verified whole; against gofakes3, which checks nothing and returns
// no checksum, the same upload lands whole and is unverified, size
// checked, never "checked by S3"; the same for standard input.
func TestUploadSummarySaysWhatTheServerChecked(t *testing.T) {
	files := map[string][]byte{"a.txt": []byte("hello\n"), "e1": nil, "d/e2": nil, "big": randomBytes(3, 6<<20)}
	dir := writeFiles(t, t.TempDir(), files)
	for _, tt := range []struct {
		store  func(*testing.T) *store
		want   []string
		forbid []string
	}{
		{func(t *testing.T) *store { return emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory}) },
			[]string{"verified: 4 objects"}, []string{"unverified", "checked by S3"}},
		{gofakes3Store,
			[]string{"unverified: 4 objects", "no-checksum: the server returned no checksum of what it stored"}, []string{"\nverified: ", "checked by S3"}},
	} {
		s := tt.store(t)
		t.Run(s.name, func(t *testing.T) {
			r := run(t, nil, s.cmd("copy", "--partsize", "5MiB", dir+"/", s.url("up/"))...)
			if r.code != 0 {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.stdout, w) {
					t.Errorf("summary lacks %q:\n%s", w, r.stdout)
				}
			}
			for _, f := range tt.forbid {
				if strings.Contains(r.stdout, f) {
					t.Errorf("summary has %q:\n%s", f, r.stdout)
				}
			}
			for name, data := range files {
				if got := s.get(t, "up/"+filepath.ToSlash(name)); !bytes.Equal(got, data) {
					t.Errorf("%s: the object differs", name)
				}
			}
			in := runStdin(t, files["big"], s.cmd("copy", "--partsize", "5MiB", "--json", "-", s.url("in"))...)
			sum := jsonLines(t, in.stdout)["summary"]
			if in.code != 0 || len(sum) != 1 {
				t.Fatalf("copy -: exit %d\n%s", in.code, in.stderr)
			}
			if wantVerified := s.emu != nil; (sum[0]["verified_objects"] == 1.0) != wantVerified {
				t.Errorf("copy -: summary %v, want verified %v", sum[0], wantVerified)
			}
		})
	}
}

// TestVerifyRequire: --verify require fails, with the reason, every
// object no checksum could verify: an upload to a store that returns
// none (from files and from standard input), and a download of an
// object uploaded in parts without checksums; what a checksum verified
// passes.
func TestVerifyRequire(t *testing.T) {
	files := map[string][]byte{"a": randomBytes(4, 1000), "e": nil}
	dir := writeFiles(t, t.TempDir(), files)
	emu := emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory})
	if r := run(t, nil, emu.cmd("copy", "--verify", "require", dir+"/", emu.url("ok/"))...); r.code != 0 {
		t.Errorf("to the emulator: exit %d, want 0\n%s%s", r.code, r.stdout, r.stderr)
	}
	fake := gofakes3Store(t)
	r := run(t, nil, fake.cmd("copy", "--verify", "require", dir+"/", fake.url("up/"))...)
	if r.code != 1 || !strings.Contains(r.stdout, ", 1 failed;") ||
		!strings.Contains(r.stderr, "not verified, as --verify require asks: the server's answers carried no checksum") {
		t.Errorf("files to gofakes3: exit %d, want 1 with the non-empty object failed and why\n%s%s", r.code, r.stdout, r.stderr)
	}
	in := runStdin(t, files["a"], fake.cmd("copy", "--verify", "require", "-", fake.url("in"))...)
	if in.code != 1 || !strings.Contains(in.stderr, "not verified, as --verify require asks") {
		t.Errorf("stdin to gofakes3: exit %d, want 1 naming why\n%s%s", in.code, in.stdout, in.stderr)
	}
	// An object in parts without checksums (moto: its ETag is no MD5,
	// and it has no checksum).
	moto := motoStore(t)
	ctx := context.Background()
	up, err := moto.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(moto.bucket), Key: aws.String("parts")})
	if err != nil {
		t.Fatal(err)
	}
	part := randomBytes(5, 5<<20)
	var done []types.CompletedPart
	for i := range int32(2) {
		out, err := moto.client.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(moto.bucket), Key: aws.String("parts"),
			UploadId: up.UploadId, PartNumber: aws.Int32(i + 1), Body: bytes.NewReader(part)})
		if err != nil {
			t.Fatal(err)
		}
		done = append(done, types.CompletedPart{PartNumber: aws.Int32(i + 1), ETag: out.ETag})
	}
	if _, err := moto.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String(moto.bucket), Key: aws.String("parts"),
		UploadId: up.UploadId, MultipartUpload: &types.CompletedMultipartUpload{Parts: done}}); err != nil {
		t.Fatal(err)
	}
	dest := t.TempDir()
	for _, tt := range []struct {
		verify string
		code   int
	}{{"full", 0}, {"require", 1}} {
		r := run(t, nil, moto.cmd("get", "--verify", tt.verify, moto.url("parts"), filepath.Join(dest, tt.verify))...)
		if r.code != tt.code || tt.code == 1 && !strings.Contains(r.stderr, "not verified, as --verify require asks") {
			t.Errorf("get --verify %s of a multipart object without checksums: exit %d, want %d\n%s%s", tt.verify, r.code, tt.code, r.stdout, r.stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dest, "require")); err == nil {
		t.Errorf("an object --verify require failed is at its final name")
	}
}
