package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager"
	tmtypes "github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// served is a `s3pd bench serve --backend memory` the test started.
type served struct {
	endpoint string
	ca       string // the certificate file over HTTPS, "" over HTTP
}

// serveMemory runs the built binary's `bench serve` with a memory
// backend and bucket "cli", over HTTPS when tls, until the test ends.
func serveMemory(t *testing.T, tls bool) served {
	t.Helper()
	return serveMemoryAt(t, tls, "127.0.0.1:0")
}

// serveMemoryAt is serveMemory listening at addr.
func serveMemoryAt(t *testing.T, tls bool, addr string) served {
	t.Helper()
	args := []string{"bench", "serve", "--backend", "memory", "--bucket", "cli", "--listen", addr}
	var ca string
	if tls {
		ca = filepath.Join(t.TempDir(), "ca.pem")
		args = append(args, "--tls", "--ca-out", ca)
	}
	ctx, cancel := context.WithCancel(context.Background())
	serve := exec.CommandContext(ctx, bin, args...)
	serve.Env = baseEnv(t)
	stdout, err := serve.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	serve.Stderr = &stderr
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		serve.Wait()
	})
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	go func() { bufio.NewReader(stdout).WriteTo(discard{}) }()
	m := regexp.MustCompile(`at (https?://127\.0\.0\.1:\d+):`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("bench serve printed %q (stderr %q), want its endpoint", line, stderr.String())
	}
	return served{endpoint: m[1], ca: ca}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// clientFiles writes what every client moves: a 1,000,000-byte file, a
// file large enough for a multipart upload, and a folder to sync with
// empty files in it.
func clientFiles(t *testing.T, big int) (dir string, want map[string][]byte) {
	t.Helper()
	dir = t.TempDir()
	want = map[string][]byte{
		"small.bin":      randomBytes(1, 1_000_000),
		"big.bin":        randomBytes(2, big),
		"sync/a0":        {},
		"sync/b1":        []byte("x\n"),
		"sync/c0":        {},
		"sync/sub/d1":    randomBytes(3, 70_000),
		"sync/sub/empty": {},
	}
	for name, b := range want {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, want
}

// sameFile fails t unless the file at path holds want.
func sameFile(t *testing.T, what, path string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("%s: %v", what, err)
		return
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s: %d bytes (sha256 %s), want %d (sha256 %s)", what, len(got), sum(got), len(want), sum(want))
	}
}

// syncedTree checks that dir holds the sync folder's files, byte for byte.
func syncedTree(t *testing.T, who, dir string, want map[string][]byte) {
	t.Helper()
	sub := map[string][]byte{}
	for name, b := range want {
		if rest, ok := strings.CutPrefix(name, "sync/"); ok {
			sub[rest] = b
		}
	}
	var got []string
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			got = append(got, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(got)
	if len(got) != len(sub) {
		t.Errorf("%s: sync down gave %v, want the %d files synced up", who, got, len(sub))
	}
	for rel, b := range sub {
		sameFile(t, who+": synced "+rel, filepath.Join(dir, filepath.FromSlash(rel)), b)
	}
}

// listed checks that a listing's output names every key.
func listed(t *testing.T, who, out string, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if !strings.Contains(out, k) {
			t.Errorf("%s: listing %q does not name %s", who, out, k)
		}
	}
}

// runTool runs a client with env added to a clean one; a failure fails t.
func runTool(t *testing.T, env []string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(baseEnv(t), env...)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("%s %s: no answer in 3 minutes (a stalled connection?)\n%s", name, strings.Join(args, " "), out)
	}
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// lookTool finds a client on the PATH (or at path, when absolute), or
// marks the test unavailable (a failure under CI).
func lookTool(t *testing.T, name string) string {
	t.Helper()
	if filepath.IsAbs(name) {
		if _, err := os.Stat(name); err != nil {
			unavailable(t, "%s not installed (.ci/run installs it)", name)
		}
		return name
	}
	p, err := exec.LookPath(name)
	if err != nil {
		unavailable(t, "%s not on the PATH (.ci/run installs it)", name)
	}
	return p
}

// cliClient is a command-line client run against the emulator: how to
// put, get, sync up, sync down and list with it.
type cliClient struct {
	name string
	// tool finds the binary; env are its settings for an endpoint.
	tool func(t *testing.T) string
	env  func(t *testing.T, s served, home string) []string
	// args for each operation; remote paths are under s3://cli/PREFIX/.
	put, get, syncUp, syncDown func(s served, local, remote string) []string
	list                       func(s served, remote string) []string
	big                        int
	// port, when set, is the port the client can reach for a scheme (the
	// CRT reaches only 80 and 443); otherwise any.
	port func(scheme string) string
	// rangesEmpty: the client reads even an empty object with a Range,
	// which S3 (and the emulator) answers 416, so empty files are
	// synced up but not down.
	rangesEmpty bool
}

func awsFlags(s served) []string {
	return append(awsEndpoint(s), "--only-show-errors")
}

// awsEndpoint are the flags that point the AWS CLI at s.
func awsEndpoint(s served) []string {
	f := []string{"--endpoint-url", s.endpoint}
	if s.ca != "" {
		f = append(f, "--ca-bundle", s.ca)
	}
	return f
}

// awsCLI is the AWS CLI at bin (v1 on the PATH, or Debian's v2) with one
// connection, as in the botocore stall an empty file caused.
func awsCLI(name, path string, big int) cliClient {
	return cliClient{name: name, big: big,
		tool: func(t *testing.T) string { return lookTool(t, path) },
		env: func(t *testing.T, s served, home string) []string {
			cfg := filepath.Join(home, "awsconfig")
			os.WriteFile(cfg, []byte("[default]\nregion = us-east-1\ns3 =\n  max_concurrent_requests = 1\n  multipart_threshold = 8MB\n  multipart_chunksize = 5MB\n"), 0o644)
			return []string{"AWS_CONFIG_FILE=" + cfg, "AWS_DEFAULT_REGION=us-east-1"}
		},
		put: func(s served, l, r string) []string {
			return append([]string{"s3", "cp", l, "s3://cli/" + r}, awsFlags(s)...)
		},
		get: func(s served, l, r string) []string {
			return append([]string{"s3", "cp", "s3://cli/" + r, l}, awsFlags(s)...)
		},
		syncUp: func(s served, l, r string) []string {
			return append([]string{"s3", "sync", l, "s3://cli/" + r}, awsFlags(s)...)
		},
		syncDown: func(s served, l, r string) []string {
			return append([]string{"s3", "sync", "s3://cli/" + r, l}, awsFlags(s)...)
		},
		list: func(s served, r string) []string {
			return append([]string{"s3", "ls", "--recursive", "s3://cli/" + r}, awsEndpoint(s)...)
		},
	}
}

// awsCLICRT is the AWS CLI v2 with its CRT transfer client, which
// reaches an endpoint only on port 80 (http) or 443 (https).
func awsCLICRT() cliClient {
	c := awsCLI("aws-cli-v2-crt", "/usr/bin/aws", 12<<20)
	c.env = func(t *testing.T, s served, home string) []string {
		cfg := filepath.Join(home, "awsconfig")
		os.WriteFile(cfg, []byte("[default]\nregion = us-east-1\ns3 =\n  preferred_transfer_client = crt\n"), 0o644)
		return []string{"AWS_CONFIG_FILE=" + cfg, "AWS_DEFAULT_REGION=us-east-1"}
	}
	c.rangesEmpty = true
	down := c.syncDown
	c.syncDown = func(s served, l, r string) []string {
		return append(down(s, l, r), "--exclude", "*0", "--exclude", "*empty")
	}
	c.port = func(scheme string) string {
		if scheme == "https" {
			return "443"
		}
		return "80"
	}
	return c
}

// listenable reports, marking the test unavailable (a failure under CI)
// otherwise, that addr can be listened on: a port under 1024 needs root,
// and another server may hold it.
func listenable(t *testing.T, addr string) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		unavailable(t, "cannot listen on %s (a port under 1024 needs root): %v", addr, err)
		return
	}
	ln.Close()
}

func s5cmdBinary() string {
	if p := os.Getenv("S5CMD_BIN"); p != "" {
		return p
	}
	if p, err := exec.LookPath("s5cmd"); err == nil {
		return p
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "s5cmd"
	}
	return filepath.Join(cache, "s3pd", "s5cmd")
}

func s5cmdClient() cliClient {
	f := func(s served) []string { return []string{"--endpoint-url", s.endpoint} }
	return cliClient{name: "s5cmd", big: 12 << 20,
		tool: func(t *testing.T) string { return lookTool(t, s5cmdBinary()) },
		env: func(t *testing.T, s served, home string) []string {
			env := []string{"AWS_REGION=us-east-1"}
			if s.ca != "" {
				env = append(env, "AWS_CA_BUNDLE="+s.ca)
			}
			return env
		},
		put: func(s served, l, r string) []string { return append(f(s), "cp", "--part-size", "5", l, "s3://cli/"+r) },
		get: func(s served, l, r string) []string { return append(f(s), "cp", "s3://cli/"+r, l) },
		syncUp: func(s served, l, r string) []string {
			return append(f(s), "sync", l+"/", "s3://cli/"+r)
		},
		syncDown: func(s served, l, r string) []string { return append(f(s), "sync", "s3://cli/"+r+"*", l+"/") },
		list:     func(s served, r string) []string { return append(f(s), "ls", "s3://cli/"+r+"*") },
	}
}

func rcloneClient() cliClient {
	return cliClient{name: "rclone", big: 12 << 20,
		tool: func(t *testing.T) string { return lookTool(t, "rclone") },
		env: func(t *testing.T, s served, home string) []string {
			// rclone refuses AWS_CA_BUNDLE (its transport is its own):
			// the last value of a key in an environment is the one used.
			env := []string{"AWS_CA_BUNDLE=", "RCLONE_CONFIG=" + filepath.Join(home, "rclone.conf"), "RCLONE_CONFIG_EMU_TYPE=s3", "RCLONE_CONFIG_EMU_PROVIDER=Other",
				"RCLONE_CONFIG_EMU_ENDPOINT=" + s.endpoint, "RCLONE_CONFIG_EMU_ACCESS_KEY_ID=test", "RCLONE_CONFIG_EMU_SECRET_ACCESS_KEY=test",
				"RCLONE_CONFIG_EMU_REGION=us-east-1", "RCLONE_S3_UPLOAD_CUTOFF=5M", "RCLONE_S3_CHUNK_SIZE=5M"}
			if s.ca != "" {
				env = append(env, "RCLONE_CA_CERT="+s.ca)
			}
			return env
		},
		put:      func(s served, l, r string) []string { return []string{"copyto", l, "emu:cli/" + r} },
		get:      func(s served, l, r string) []string { return []string{"copyto", "emu:cli/" + r, l} },
		syncUp:   func(s served, l, r string) []string { return []string{"sync", l, "emu:cli/" + r} },
		syncDown: func(s served, l, r string) []string { return []string{"sync", "emu:cli/" + r, l} },
		list:     func(s served, r string) []string { return []string{"lsf", "-R", "emu:cli/" + r} },
	}
}

// TestClients runs every common S3 client against `bench serve` over
// HTTP and HTTPS: put, get, a multipart upload, a sync up and down of a
// folder with empty files, and a listing, each result compared byte for
// byte.
func TestClients(t *testing.T) {
	clients := []cliClient{
		awsCLI("aws-cli-v1", "aws", 20_000_000),
		awsCLI("aws-cli-v2", "/usr/bin/aws", 12<<20),
		awsCLICRT(),
		s5cmdClient(),
		rcloneClient(),
	}
	for _, c := range clients {
		for _, scheme := range []string{"http", "https"} {
			t.Run(c.name+"/"+scheme, func(t *testing.T) {
				tool := c.tool(t)
				addr := "127.0.0.1:0"
				if c.port != nil {
					addr = "127.0.0.1:" + c.port(scheme)
					listenable(t, addr)
				}
				s := serveMemoryAt(t, scheme == "https", addr)
				home := t.TempDir()
				env := c.env(t, s, home)
				dir, want := clientFiles(t, c.big)
				back := t.TempDir()
				for _, f := range []string{"small.bin", "big.bin"} {
					runTool(t, env, tool, c.put(s, filepath.Join(dir, f), c.name+"/"+f)...)
					runTool(t, env, tool, c.get(s, filepath.Join(back, f), c.name+"/"+f)...)
					sameFile(t, c.name+": "+f+" put and got", filepath.Join(back, f), want[f])
				}
				runTool(t, env, tool, c.syncUp(s, filepath.Join(dir, "sync"), c.name+"/sync/")...)
				down := t.TempDir()
				runTool(t, env, tool, c.syncDown(s, down, c.name+"/sync/")...)
				if c.rangesEmpty {
					for name, b := range want {
						if len(b) == 0 {
							delete(want, name)
						}
					}
				}
				syncedTree(t, c.name, down, want)
				out := runTool(t, env, tool, c.list(s, c.name+"/")...)
				listed(t, c.name, out, "small.bin", "big.bin", "a0", "c0", "sub/empty")
			})
		}
	}
}

// TestBoto3AndBotocore: boto3 puts, gets, lists and uploads in parts;
// botocore with one connection sends an empty PUT and then a PUT on the
// same connection, which stalled until its read timeout when the empty
// PUT got no 100 Continue.
func TestBoto3AndBotocore(t *testing.T) {
	py := lookTool(t, "python3")
	if err := exec.Command(py, "-c", "import boto3").Run(); err != nil {
		unavailable(t, "python3 has no boto3 (.ci/run installs python3-boto3)")
	}
	script := `
import sys, time, boto3, botocore.config, hashlib
from boto3.s3.transfer import TransferConfig
ep, ca, path = sys.argv[1], sys.argv[2] or None, sys.argv[3]
cfg = botocore.config.Config(s3={'addressing_style': 'path'}, read_timeout=20, connect_timeout=5,
                             max_pool_connections=1, retries={'max_attempts': 1, 'mode': 'standard'})
c = boto3.client('s3', endpoint_url=ep, verify=ca, region_name='us-east-1',
                 aws_access_key_id='test', aws_secret_access_key='test', config=cfg)
slowest = 0
for i in range(3):
    c.put_object(Bucket='cli', Key='zero%d' % i, Body=b'')
    t = time.monotonic()
    c.put_object(Bucket='cli', Key='small%d' % i, Body=b'hello world')
    slowest = max(slowest, time.monotonic() - t)
assert c.get_object(Bucket='cli', Key='small2')['Body'].read() == b'hello world'
assert c.get_object(Bucket='cli', Key='zero2')['Body'].read() == b''
c.upload_file(path, 'cli', 'big', Config=TransferConfig(multipart_threshold=5*1024*1024, multipart_chunksize=5*1024*1024, max_concurrency=1))
c.download_file('cli', 'big', path + '.back')
keys = sorted(o['Key'] for o in c.list_objects_v2(Bucket='cli')['Contents'])
print(' '.join(keys))
print(hashlib.sha256(open(path + '.back', 'rb').read()).hexdigest())
print('stalled' if slowest >= 10 else 'no stall')
`
	for _, scheme := range []string{"http", "https"} {
		t.Run(scheme, func(t *testing.T) {
			s := serveMemory(t, scheme == "https")
			big := randomBytes(9, 12<<20)
			path := filepath.Join(t.TempDir(), "big")
			if err := os.WriteFile(path, big, 0o644); err != nil {
				t.Fatal(err)
			}
			out := runTool(t, nil, py, "-c", script, s.endpoint, s.ca, path)
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if len(lines) < 3 || lines[len(lines)-3] != "big small0 small1 small2 zero0 zero1 zero2" || lines[len(lines)-2] != sum(big) {
				t.Errorf("boto3 over %s printed %q, want the 7 keys and the sha256 %s of the multipart object", scheme, out, sum(big))
			}
			// A PUT after an empty one stalled until botocore's read
			// timeout (20 s here); it takes milliseconds: 10 s is a bound
			// no machine reaches but by that stall.
			if lines[len(lines)-1] != "no stall" {
				t.Errorf("boto3 over %s: a PUT after an empty PUT on the same connection stalled 10 s or more (%q)", scheme, out)
			}
		})
	}
}

// bufferAt is an io.WriterAt into a buffer of the object's size.
type bufferAt struct {
	b []byte
	n atomic.Int64
}

func (w *bufferAt) WriteAt(p []byte, off int64) (int, error) {
	if off < 0 || off+int64(len(p)) > int64(len(w.b)) {
		return 0, fmt.Errorf("write of %d bytes at %d past the object's %d", len(p), off, len(w.b))
	}
	w.n.Add(int64(len(p)))
	return copy(w.b[off:], p), nil
}

// TestTransferManager: the Go SDK's transfer manager
// (feature/s3/transfermanager) uploads in parts and downloads in ranges,
// byte for byte, over both schemes.
func TestTransferManager(t *testing.T) {
	for _, scheme := range []string{"http", "https"} {
		t.Run(scheme, func(t *testing.T) {
			s := serveMemory(t, scheme == "https")
			hc := awshttp.NewBuildableClient()
			if s.ca != "" {
				pem, err := os.ReadFile(s.ca)
				if err != nil {
					t.Fatal(err)
				}
				pool := x509.NewCertPool()
				pool.AppendCertsFromPEM(pem)
				hc = hc.WithTransportOptions(func(tr *http.Transport) { tr.TLSClientConfig = &tls.Config{RootCAs: pool} })
			}
			c := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(s.endpoint), UsePathStyle: true,
				Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""), HTTPClient: hc})
			ctx := context.Background()
			for _, n := range []int{0, 1_000_000, 17 << 20} {
				body := randomBytes(uint64(n)+4, n)
				key := fmt.Sprintf("tm/%d", n)
				tm := transfermanager.New(c, func(o *transfermanager.Options) {
					o.PartSizeBytes = 5 << 20
					o.GetObjectType = tmtypes.GetObjectRanges
				})
				if _, err := tm.UploadObject(ctx, &transfermanager.UploadObjectInput{Bucket: aws.String("cli"), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
					t.Fatalf("upload %s: %v", key, err)
				}
				buf := &bufferAt{b: make([]byte, n)}
				if _, err := tm.DownloadObject(ctx, &transfermanager.DownloadObjectInput{Bucket: aws.String("cli"), Key: aws.String(key), WriterAt: buf}); err != nil {
					t.Fatalf("download %s: %v", key, err)
				}
				if !bytes.Equal(buf.b, body) || buf.n.Load() != int64(n) {
					t.Errorf("%s: downloaded %d bytes (sha256 %s), want %d (%s)", key, buf.n.Load(), sum(buf.b), n, sum(body))
				}
			}
			out, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("cli"), Prefix: aws.String("tm/")})
			if err != nil || len(out.Contents) != 3 {
				t.Errorf("list tm/: %v, %d objects, want 3", err, len(out.Contents))
			}
		})
	}
}
