package e2e

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/s3pd/s3pd/pkg/s3emu"
)

// runStdin runs s3pd with stdin as its standard input.
func runStdin(t *testing.T, stdin []byte, args ...string) result {
	t.Helper()
	c := exec.Command(bin, args...)
	c.Env = baseEnv(t)
	c.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	err := c.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return r
}

// pendingUploads counts the incomplete multipart uploads in the bucket.
func (s *store) pendingUploads(t *testing.T) int {
	t.Helper()
	out, err := s.client.ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{Bucket: aws.String(s.bucket)})
	var ae smithy.APIError
	switch {
	case errors.As(err, &ae) && ae.ErrorCode() == "NoSuchUpload":
		return 0 // gofakes3's answer while no upload was ever started
	case err != nil:
		t.Fatal(err)
	}
	return len(out.Uploads)
}

// TestCopyFromStdin: `s3pd cp - s3://b/k` uploads standard input, of
// unknown size, on the emulator and on moto: one PutObject when it fits
// one part, else a multipart upload whose parts carry checksums; the
// JSON summary says how many requests and whether the whole object's
// checksum was checked; --expected-size sizes the parts.
func TestCopyFromStdin(t *testing.T) {
	stores := []func(*testing.T) *store{
		func(t *testing.T) *store { return emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory}) },
		motoStore,
	}
	stream := randomBytes(9, 12<<20)
	tests := []struct {
		name     string
		data     []byte
		flags    []string
		requests float64 // PutObject 1; else create + parts + complete
	}{
		{"small", []byte("hi\n"), nil, 1},
		{"empty", nil, nil, 1},
		{"5 MiB parts", stream, []string{"--partsize", "5MiB"}, 1 + 3 + 1},
		{"parts sized by --expected-size", stream, []string{"--partsize", "5MiB", "--expected-size", "60GiB"}, 1 + 2 + 1}, // 7 MiB parts
		{"at a part boundary", stream[:10<<20], []string{"--partsize", "5MiB"}, 1 + 2 + 1},
	}
	for _, newStore := range stores {
		s := newStore(t)
		for _, tt := range tests {
			t.Run(s.name+"/"+tt.name, func(t *testing.T) {
				key := "in/" + strings.ReplaceAll(tt.name, " ", "-")
				r := runStdin(t, tt.data, s.cmd("cp", append(tt.flags, "--json", "-", s.url(key))...)...)
				if r.code != 0 {
					t.Fatalf("exit %d\n%s", r.code, r.stderr)
				}
				if got := s.get(t, key); !bytes.Equal(got, tt.data) {
					t.Fatalf("object holds %d bytes, want the %d of the stream", len(got), len(tt.data))
				}
				sum := jsonLines(t, r.stdout)["summary"][0]
				if sum["objects"] != 1.0 || sum["bytes"] != float64(len(tt.data)) || sum["requests"] != tt.requests {
					t.Errorf("summary objects %v, bytes %v, requests %v; want 1, %d, %v", sum["objects"], sum["bytes"], sum["requests"], len(tt.data), tt.requests)
				}
				if s.emu != nil && sum["verified_objects"] != 1.0 {
					t.Errorf("the emulator keeps full-object checksums, but the upload is not verified: %v", sum)
				}
				obj := jsonLines(t, r.stdout)["object"][0]
				if obj["destination"] != s.url(key) {
					t.Errorf("object line destination %v, want %s", obj["destination"], s.url(key))
				}
				if n := s.pendingUploads(t); n != 0 {
					t.Errorf("%d multipart uploads left", n)
				}
			})
		}
	}
	t.Run("line at info", func(t *testing.T) {
		s := emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory})
		r := runStdin(t, []byte("hi\n"), s.cmd("cp", "--log-level", "info", "-", s.url("k"))...)
		if want := "upload: - to " + s.url("k") + "\n"; r.code != 0 || !strings.HasPrefix(r.stdout, want) {
			t.Errorf("exit %d, stdout %q, want it to start with %q\n%s", r.code, r.stdout, want, r.stderr)
		}
	})
}

// TestCopyFromStdinRefusals: what a stream cannot do is a usage error.
func TestCopyFromStdinRefusals(t *testing.T) {
	s := emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory})
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"prefix", s.cmd("cp", "-", s.url("dir/")), "names no key"},
		{"local dest", s.cmd("cp", "-", t.TempDir()), "DEST is an s3://bucket/key URL"},
		{"with --delete", s.cmd("cp", "--delete", "-", s.url("k")), "one stream to one object"},
		{"--expected-size of a file", s.cmd("cp", "--expected-size", "1GiB", t.TempDir(), s.url("k")), "SRC -"},
		{"bad --expected-size", s.cmd("cp", "--expected-size", "lots", "-", s.url("k")), "--expected-size"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runStdin(t, nil, tt.args...)
			if r.code != 2 || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("exit %d, want 2 with %q\n%s", r.code, tt.want, r.stderr)
			}
		})
	}
}

// TestCopyFromStdinInterrupted: an interrupt while the stream is still
// open aborts the multipart upload: nothing is left to bill.
func TestCopyFromStdinInterrupted(t *testing.T) {
	s := emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory})
	c := exec.Command(bin, s.cmd("cp", "--partsize", "5MiB", "-", s.url("cut"))...)
	c.Env = baseEnv(t)
	var stderr bytes.Buffer
	c.Stderr = &stderr
	in, err := c.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	in.Write(randomBytes(3, 12<<20)) // two parts sent, a third begun; the stream stays open
	// A part asked for: the multipart upload it belongs to was made.
	awaitEmu(t, s.emu, 20*time.Second, "a multipart upload's first part sent", func(st s3emu.Stats) bool { return st.PutRequests > 0 })
	c.Process.Signal(syscall.SIGINT)
	err = c.Wait()
	in.Close()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 130 {
		t.Errorf("exit %v, want 130 (interrupted)\n%s", err, stderr.String())
	}
	if n := s.pendingUploads(t); n != 0 {
		t.Errorf("%d multipart uploads left after the interrupt", n)
	}
	if _, err := s.client.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(s.bucket), Key: aws.String("cut")}); err == nil {
		t.Errorf("an interrupted stream left an object")
	}
}
