// Package e2e runs the built s3pd binary over real HTTP on loopback
// against S3 servers: the embedded emulator and moto, an independent
// implementation of the S3 API.
package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3pd/s3pd/internal/testenv"
	"github.com/s3pd/s3pd/pkg/s3emu"
)

// bin is the s3pd binary built once for the package's tests.
var bin string

// envNoFlock, set, makes the test binary a launcher (launcher) of s3pd
// on a file system that refuses locks (lockrefused_test.go).
const envNoFlock = "E2E_EXEC_WITHOUT_FLOCK"

func TestMain(m *testing.M) {
	if launcher != nil && os.Getenv(envNoFlock) != "" {
		launcher() // runs s3pd as a test asks (lockrefused_test.go)
	}
	dir, err := os.MkdirTemp("", "s3pd-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "s3pd")
	build := exec.Command("go", "build", "-o", bin, "..")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build s3pd:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// result is what one run of the binary did.
type result struct {
	stdout, stderr string
	code           int
}

// run runs s3pd with args and a clean environment plus env.
func run(t *testing.T, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	// A run that outlives its time is asked for its goroutines (SIGQUIT
	// makes Go print them on stderr), then killed: a hang shows where.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGQUIT) }
	cmd.WaitDelay = 10 * time.Second
	cmd.Env = append(baseEnv(t), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("run s3pd %v: %v", args, err)
	}
	return r
}

// baseEnv keeps the test away from the machine's AWS configuration.
func baseEnv(t *testing.T) []string {
	home := t.TempDir()
	env := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"),
		"AWS_CONFIG_FILE=" + filepath.Join(home, "config"),
		"AWS_SHARED_CREDENTIALS_FILE=" + filepath.Join(home, "credentials"),
		"AWS_EC2_METADATA_DISABLED=true",
		"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test"}
	if ca := os.Getenv("AWS_CA_BUNDLE"); ca != "" {
		env = append(env, "AWS_CA_BUNDLE="+ca)
	}
	return env
}

// store is an S3 server the tests put objects into.
type store struct {
	name     string
	endpoint string
	bucket   string
	client   *s3.Client
	emu      *s3emu.Server // nil for moto
	signed   bool          // requests are signed (moto wants credentials)
}

func newClient(t *testing.T, endpoint string) *s3.Client {
	return s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		HTTPClient:   awshttp.NewBuildableClient(),
	})
}

// emuStore starts the emulator in-process on loopback.
func emuStore(t *testing.T, opts s3emu.Options) *store {
	t.Helper()
	ts := s3emu.NewTestServer(t, opts)
	return &store{name: "emulator", endpoint: ts.URL, bucket: s3emu.DefaultBucket, client: newClient(t, ts.URL), emu: ts.Server}
}

// unavailable skips t for want of something on this machine, but fails
// it under CI (CI=true, as .ci/run sets), which has everything the suite
// needs: a suite that skips there proves nothing.
func unavailable(t *testing.T, format string, args ...any) {
	t.Helper()
	testenv.Unavailable(t, format, args...)
}

// motoStore starts moto_server, a second S3 implementation, and stops it
// by its PID when the test ends.
func motoStore(t *testing.T) *store {
	t.Helper()
	exe, err := exec.LookPath("moto_server")
	if err != nil {
		unavailable(t, "moto_server is not installed: skipping the moto suite")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(exe, "-H", "127.0.0.1", "-p", fmt.Sprint(port))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
	return startedStore(t, "moto", fmt.Sprintf("http://127.0.0.1:%d", port))
}

// startedStore waits up to 30 s for the S3 server named name to answer
// at endpoint, then creates the tests' bucket on it.
func startedStore(t *testing.T, name, endpoint string) *store {
	t.Helper()
	var err error
	if !eventually(30*time.Second, func() bool {
		var resp *http.Response
		if resp, err = http.Get(endpoint + "/"); err == nil {
			resp.Body.Close()
		}
		return err == nil
	}) {
		t.Fatalf("%s did not start: %v", name, err)
	}
	s := &store{name: name, endpoint: endpoint, bucket: "e2e-bucket", client: newClient(t, endpoint), signed: true}
	if _, err := s.client.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(s.bucket)}); err != nil {
		t.Fatal(err)
	}
	return s
}

func (s *store) put(t *testing.T, key string, data []byte) {
	t.Helper()
	_, err := s.client.PutObject(context.Background(), &s3.PutObjectInput{
		Bucket: aws.String(s.bucket), Key: aws.String(key), Body: bytes.NewReader(data),
	})
	if err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
}

// args are the flags that point s3pd at the store.
func (s *store) args() []string {
	a := []string{"--endpoint-url", s.endpoint, "--region", "us-east-1", "--no-progress"}
	if !s.signed {
		a = append(a, "--no-sign-request")
	}
	return a
}

// cmd returns the arguments of subcommand sub pointed at the store.
func (s *store) cmd(sub string, args ...string) []string {
	return append(append([]string{sub}, s.args()...), args...)
}

func (s *store) url(key string) string { return "s3://" + s.bucket + "/" + key }

// randomBytes returns n deterministic pseudo-random bytes.
func randomBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := 0; i+8 <= n; i += 8 {
		v := r.Uint64()
		for j := range 8 {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	for i := n - n%8; i < n; i++ {
		b[i] = byte(r.Uint32())
	}
	return b
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// tree returns the hash of every regular file under dir, by relative
// path, and fails on anything else (temporary files, symlinks).
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			if rel == ".s3pd" {
				left, _ := os.ReadDir(p)
				t.Errorf("work folder left behind with %d entries", len(left))
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasPrefix(d.Name(), ".s3pd-probe") {
			t.Errorf("temporary file left behind: %s", rel)
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out[filepath.ToSlash(rel)] = sum(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// sameTree fails unless got holds exactly want (name -> content).
func sameTree(t *testing.T, dir string, want map[string][]byte) {
	t.Helper()
	got := tree(t, dir)
	for name, data := range want {
		if got[name] != sum(data) {
			t.Errorf("%s: content differs or missing (got hash %q)", name, got[name])
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("unexpected file %s", name)
		}
	}
}
