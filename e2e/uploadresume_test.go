package e2e

import (
	"bytes"
	"context"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3pd/s3pd/pkg/s3emu"
)

// started is a run of s3pd that a test interrupts.
type started struct {
	cmd            *exec.Cmd
	in             io.WriteCloser // its standard input, for a stream
	stdout, stderr bytes.Buffer
}

// start starts s3pd with env added to the test environment; stdin
// gives it a pipe for standard input.
func start(t *testing.T, env []string, stdin bool, args ...string) *started {
	t.Helper()
	s := &started{cmd: exec.Command(bin, args...)}
	s.cmd.Env = append(baseEnv(t), env...)
	s.cmd.Stdout, s.cmd.Stderr = &s.stdout, &s.stderr
	if stdin {
		in, err := s.cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		s.in = in
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.cmd.Process.Kill(); s.cmd.Wait() })
	return s
}

// stop sends sig and returns the exit code.
func (s *started) stop(sig syscall.Signal) int {
	s.cmd.Process.Signal(sig)
	s.cmd.Wait()
	if s.in != nil {
		s.in.Close()
	}
	if ws, ok := s.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return -int(ws.Signal())
	}
	return s.cmd.ProcessState.ExitCode()
}

// waitForParts waits until the bucket's one incomplete upload has at
// least n parts, and returns its ID.
func (s *store) waitForParts(t *testing.T, n int, run *started) string {
	t.Helper()
	ctx := context.Background()
	id := ""
	// The store may be moto, which signals nothing: its uploads are asked.
	if !eventually(60*time.Second, func() bool {
		out, err := s.client.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(s.bucket)})
		if err != nil || len(out.Uploads) != 1 {
			return false
		}
		up := out.Uploads[0]
		parts, err := s.client.ListParts(ctx, &s3.ListPartsInput{Bucket: aws.String(s.bucket), Key: up.Key, UploadId: up.UploadId})
		id = aws.ToString(up.UploadId)
		return err == nil && len(parts.Parts) >= n
	}) {
		t.Fatalf("no upload with %d parts\n%s", n, run.stderr.String())
	}
	return id
}

// TestUploadResumesAfterAnyInterruption: an upload of a file interrupted
// by SIGINT, SIGTERM or kill -9 keeps its multipart upload (the summary
// says so in an upload's words), and a rerun of the same command sends
// only the parts S3 does not hold, completes it and leaves no upload.
func TestUploadResumesAfterAnyInterruption(t *testing.T) {
	data := randomBytes(7, 30<<20)
	dir := writeFiles(t, t.TempDir(), map[string][]byte{"big": data})
	for _, tt := range []struct {
		name  string
		sig   syscall.Signal
		codes []int
	}{{"SIGINT", syscall.SIGINT, []int{130}}, {"SIGTERM", syscall.SIGTERM, []int{130, 143}}, {"kill -9", syscall.SIGKILL, []int{-int(syscall.SIGKILL)}}} {
		t.Run(tt.name, func(t *testing.T) {
			s := emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory})
			env := []string{"XDG_CACHE_HOME=" + t.TempDir()}
			args := s.cmd("copy", "--partsize", "5MiB", "--threads", "1", "--json", filepath.Join(dir, "big"), s.url("up/big"))
			first := start(t, env, false, append(args, "--max-bandwidth", "20MB/s")...)
			// A part the server lists may not be journaled yet when the
			// signal lands (the answer is still on its way): wait for one
			// more than the two the rerun must keep.
			id := s.waitForParts(t, 3, first)
			if code := first.stop(tt.sig); !slices.Contains(tt.codes, code) {
				t.Fatalf("exit %d, want one of %v\n%s", code, tt.codes, first.stderr.String())
			}
			if tt.sig == syscall.SIGINT {
				if sum := jsonLines(t, first.stdout.String())["summary"]; len(sum) != 1 || sum[0]["kept_for_resume"] != 1.0 {
					t.Errorf("summary %v, want one object kept for resume", sum)
				}
			}
			if n := s.pendingUploads(t); n != 1 {
				t.Fatalf("%d incomplete uploads after the interruption, want the one to resume", n)
			}
			s.absent(t, "up/big")
			r := run(t, env, args...)
			if r.code != 0 {
				t.Fatalf("rerun: exit %d\n%s", r.code, r.stderr)
			}
			sum := jsonLines(t, r.stdout)["summary"][0]
			if sum["resumed_objects"] != 1.0 || sum["resumed_bytes"].(float64) < 10<<20 || sum["verified_objects"] != 1.0 {
				t.Errorf("rerun summary %v, want the object resumed with at least 2 parts kept, and verified", sum)
			}
			if got := s.get(t, "up/big"); !bytes.Equal(got, data) {
				t.Errorf("the resumed object differs")
			}
			if n := s.pendingUploads(t); n != 0 {
				t.Errorf("%d incomplete uploads after the rerun (upload %s)", n, id)
			}
		})
	}
}

// TestUploadInterruptSaysUploadWords: an interrupted upload's summary
// speaks of uploads kept in S3, not of parts on disk or fetching.
func TestUploadInterruptSaysUploadWords(t *testing.T) {
	dir := writeFiles(t, t.TempDir(), map[string][]byte{"big": randomBytes(8, 30<<20)})
	s := emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory})
	run := start(t, []string{"XDG_CACHE_HOME=" + t.TempDir()}, false,
		s.cmd("copy", "--partsize", "5MiB", "--threads", "1", "--max-bandwidth", "20MB/s", filepath.Join(dir, "big"), s.url("w/big"))...)
	s.waitForParts(t, 2, run) // one more than must be kept: see TestUploadResumesAfterAnyInterruption
	if code := run.stop(syscall.SIGINT); code != 130 {
		t.Fatalf("exit %d, want 130\n%s", code, run.stderr.String())
	}
	out := run.stdout.String()
	if !strings.Contains(out, "partial: 1 object kept as incomplete uploads with their parts in S3: run the same command again to resume them") ||
		strings.Contains(out, "on disk") || strings.Contains(out, "fetches") {
		t.Errorf("summary after the interrupt:\n%s\nwant upload words", out)
	}
}

// TestStdinUploadUnderFaults: `copy - s3://...` interrupted by SIGINT or
// kill -9, or failing on 500s mid-part, leaves no object at the key
// unless complete. SIGINT aborts its upload; after kill -9 the next run
// to the key aborts the upload left behind and names it; transient 500s
// are retried, and counted.
func TestStdinUploadUnderFaults(t *testing.T) {
	stream := randomBytes(9, 12<<20)
	t.Run("SIGINT", func(t *testing.T) {
		s := emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory})
		run := start(t, nil, true, s.cmd("copy", "--partsize", "5MiB", "-", s.url("cut"))...)
		run.in.Write(stream) // two parts sent, a third begun; the stream stays open
		s.waitForParts(t, 1, run)
		if code := run.stop(syscall.SIGINT); code != 130 {
			t.Errorf("exit %d, want 130\n%s", code, run.stderr.String())
		}
		s.absent(t, "cut")
		if n := s.pendingUploads(t); n != 0 {
			t.Errorf("%d multipart uploads left after the interrupt", n)
		}
	})
	t.Run("kill -9", func(t *testing.T) {
		s := emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory})
		env := []string{"XDG_CACHE_HOME=" + t.TempDir()}
		run := start(t, env, true, s.cmd("copy", "--partsize", "5MiB", "-", s.url("k9"))...)
		run.in.Write(stream)
		id := s.waitForParts(t, 1, run)
		run.stop(syscall.SIGKILL)
		s.absent(t, "k9")
		if n := s.pendingUploads(t); n != 1 {
			t.Fatalf("%d uploads after kill -9, want the one it left", n)
		}
		small := []byte("the second run\n")
		r := runStdinEnv(t, env, small, s.cmd("copy", "-", s.url("k9"))...)
		if r.code != 0 {
			t.Fatalf("rerun: exit %d\n%s", r.code, r.stderr)
		}
		if want := "aborted the incomplete upload " + id + " of " + s.url("k9"); strings.Count(r.stderr, want) != 1 ||
			!strings.Contains(r.stderr, "left by an interrupted upload of a stream") {
			t.Errorf("rerun stderr:\n%s\nwant one line %q naming it as s3pd's", r.stderr, want)
		}
		if n := s.pendingUploads(t); n != 0 {
			t.Errorf("%d uploads left after the rerun", n)
		}
		if got := s.get(t, "k9"); !bytes.Equal(got, small) {
			t.Errorf("the object holds %q, want the rerun's stream", got)
		}
	})
	for _, tt := range []struct {
		name   string
		times  int
		status int
		code   int
		want   string // the summary's count of retries
	}{
		{"500s mid-part, then none", 3, 500, 0, "retries: 3 (0 SlowDowns)"},
		{"SlowDowns mid-part, then none", 3, 503, 0, "retries: 3 (3 SlowDowns)"},
		{"500s from the second part on", -1, 500, 1, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory,
				Faults: s3emu.NewFaults(s3emu.Rule{Key: "f", Method: "PUT", Attempt: 2, Times: tt.times, Action: s3emu.Status{Code: tt.status}})})
			r := runStdin(t, stream, s.cmd("copy", "--partsize", "5MiB", "--threads", "1", "-", s.url("f"))...)
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d\n%s", r.code, tt.code, r.stderr)
			}
			if tt.code == 0 {
				if got := s.get(t, "f"); !bytes.Equal(got, stream) {
					t.Errorf("the object differs from the stream")
				}
				if !strings.Contains(r.stdout, tt.want) {
					t.Errorf("summary:\n%s\nwant %q", r.stdout, tt.want)
				}
			} else {
				s.absent(t, "f")
			}
			if n := s.pendingUploads(t); n != 0 {
				t.Errorf("%d multipart uploads left", n)
			}
		})
	}
}

// runStdinEnv is runStdin with env added.
func runStdinEnv(t *testing.T, env []string, stdin []byte, args ...string) result {
	t.Helper()
	c := exec.Command(bin, args...)
	c.Env = append(baseEnv(t), env...)
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

// TestStdinClosedIsRefused: `copy - s3://b/k <&-` (a closed standard
// input, which the Go runtime reopens on /dev/null) is refused with one
// line and exit 2, and no object is made; an empty pipe makes an empty
// object.
func TestStdinClosedIsRefused(t *testing.T) {
	s := emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory})
	c := exec.Command("sh", "-c", `exec "$0" "$@" <&-`, bin)
	c.Args = append(c.Args, s.cmd("copy", "-", s.url("closed"))...)
	c.Env = baseEnv(t)
	var stderr bytes.Buffer
	c.Stderr = &stderr
	err := c.Run()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 2 || strings.Count(strings.TrimSpace(stderr.String()), "\n") != 0 ||
		!strings.Contains(stderr.String(), "standard input is closed") {
		t.Errorf("exit %v, stderr %q; want 2 and one line saying standard input is closed", err, stderr.String())
	}
	s.absent(t, "closed")
	if r := runStdin(t, []byte{}, s.cmd("copy", "-", s.url("empty"))...); r.code != 0 || len(s.get(t, "empty")) != 0 {
		t.Errorf("an empty pipe: exit %d, want 0 and an empty object\n%s", r.code, r.stderr)
	}
}
