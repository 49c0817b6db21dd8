package e2e

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3pd/s3pd/pkg/s3emu"
)

// A source file rewritten in place while it is uploaded fails the upload:
// no object of the old head and the new tail is completed. The upload is
// slowed down (--max-bandwidth) so that the rewrite lands in the middle.
func TestUploadOfAChangingFile(t *testing.T) {
	const size = 12 << 20
	old, fresh := randomBytes(11, size), randomBytes(12, size)
	dir := writeFiles(t, t.TempDir(), map[string][]byte{"f": old})
	s := emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory, LogRequests: true})
	done := make(chan result, 1)
	go func() {
		done <- run(t, nil, s.cmd("copy", "--max-bandwidth", "4MiB/s", "--partsize", "1MiB", "--multipart-threshold", "1MiB",
			"--threads", "2", filepath.Join(dir, "f"), s.url("up/f"))...)
	}()
	// Rewrite once a third part was asked for (two threads: a part has
	// been sent): the upload is under way, and at 4 MiB/s most of it is
	// still to come.
	awaitEmu(t, s.emu, 30*time.Second, "the upload's third part asked for", func(s3emu.Stats) bool { return partsAsked(s.emu.Log(), "up/f") >= 3 })
	f, err := os.OpenFile(filepath.Join(dir, "f"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(fresh, 0); err != nil { // in place: the size never changes
		t.Fatal(err)
	}
	f.Close()
	r := <-done
	out, err := s.client.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String("up/f")})
	if err == nil {
		got, _ := io.ReadAll(out.Body)
		out.Body.Close()
		if !bytes.Equal(got, old) && !bytes.Equal(got, fresh) {
			t.Fatalf("exit %d and an object that is neither the old file nor the new one", r.code)
		}
	}
	if r.code == 0 {
		t.Fatalf("exit 0 for a file rewritten during its upload\nstderr: %s", r.stderr)
	}
	if !strings.Contains(r.stderr, "modified") {
		t.Errorf("stderr does not say the file changed: %s", r.stderr)
	}
	ups, err := s.client.ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{Bucket: aws.String(s.bucket)})
	if err == nil && len(ups.Uploads) != 0 {
		t.Errorf("%d multipart uploads left open", len(ups.Uploads))
	}
}

// partsAsked counts the part uploads of key that arrived at the server.
func partsAsked(log []s3emu.Request, key string) int {
	n := 0
	for _, r := range log {
		if r.Method == "PUT" && r.Key == key && strings.Contains(r.Query, "partNumber=") {
			n++
		}
	}
	return n
}

// TestUploadNamesTheChange: a file truncated during its multipart
// upload, or rewritten during its PutObject, fails with a message that
// names the file and what changed, never "http status 0" (the request
// that the changed body broke got no answer), and leaves no object.
func TestUploadNamesTheChange(t *testing.T) {
	const size = 12 << 20
	for _, tc := range []struct {
		name, threshold string
		started         func([]s3emu.Request) bool
		change          func(path string) error
	}{
		{"truncated mid multipart", "1MiB", func(log []s3emu.Request) bool { return partsAsked(log, "up/f") >= 3 },
			func(p string) error { return os.Truncate(p, 1<<20) }},
		{"rewritten mid put", "64MiB", func(log []s3emu.Request) bool { return putsAsked(log, "up/f") >= 1 },
			func(p string) error {
				f, err := os.OpenFile(p, os.O_WRONLY, 0)
				if err == nil {
					_, err = f.WriteAt(randomBytes(13, size), 0)
					f.Close()
				}
				return err
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeFiles(t, t.TempDir(), map[string][]byte{"f": randomBytes(11, size)})
			s := emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory, LogRequests: true})
			done := make(chan result, 1)
			go func() {
				done <- run(t, nil, s.cmd("copy", "--max-bandwidth", "4MiB/s", "--partsize", "1MiB", "--multipart-threshold", tc.threshold,
					"--threads", "2", filepath.Join(dir, "f"), s.url("up/f"))...)
			}()
			awaitEmu(t, s.emu, 30*time.Second, "the upload started", func(s3emu.Stats) bool { return tc.started(s.emu.Log()) })
			if err := tc.change(filepath.Join(dir, "f")); err != nil {
				t.Fatal(err)
			}
			r := <-done
			// Changed while a part read it, or before the next part opened.
			named := strings.Contains(r.stderr, "changed while it was read") || strings.Contains(r.stderr, "modified since it was listed")
			if r.code != 1 || !named || !strings.Contains(r.stderr, filepath.Join(dir, "f")) || strings.Contains(r.stderr, "status 0") {
				t.Errorf("exit %d, want 1 naming the change, not \"status 0\":\n%s", r.code, r.stderr)
			}
			if _, err := s.client.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(s.bucket), Key: aws.String("up/f")}); err == nil {
				t.Errorf("an object was made of a file that changed during its upload")
			}
		})
	}
}

// putsAsked counts the PutObject requests of key that reached the server.
func putsAsked(log []s3emu.Request, key string) int {
	n := 0
	for _, r := range log {
		if r.Method == "PUT" && r.Key == key && !strings.Contains(r.Query, "partNumber=") && !strings.Contains(r.Query, "uploadId=") {
			n++
		}
	}
	return n
}
