package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
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
// opts' lifetime, filled through an SDK client with its own S3 Express support.
func dirStore(t *testing.T, opts s3emu.Options) *store {
	t.Helper()
	opts.Backend, opts.Buckets = s3emu.BackendMemory, append(opts.Buckets, dirBucket)
	ts := s3emu.NewTestServer(t, opts)
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
	s := dirStore(t, s3emu.Options{})
	want := dirData(t, s)
	before := s.emu.SessionsCreated()
	dest := t.TempDir()
	// --verify full: an MD5-looking ETag (the emulator's are not MD5s)
	// must not be checked as one.
	args := s.cmd("get", "--verify", "full", "--partsize", "1MiB", "--threads", "4", s.url("data/"), dest)
	r := run(t, nil, slices.DeleteFunc(args, func(a string) bool { return a == "--quiet" })...)
	if r.code != 0 {
		t.Fatalf("get: exit %d\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "source: directory bucket (S3 Express One Zone, zone use1-az4)") {
		t.Errorf("the summary does not say directory bucket:\n%s", r.stdout)
	}
	sameTree(t, dest, want)
	if n := s.emu.SessionsCreated() - before; n != 1 {
		t.Errorf("%d sessions created, want 1 for the run", n)
	}
}

// TestDirectoryBucketCommands runs cat, ls, du and copy both ways on a
// directory bucket.
func TestDirectoryBucketCommands(t *testing.T) {
	s := dirStore(t, s3emu.Options{Buckets: []string{"general"}})
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
	before := s.emu.SessionsCreated()
	r = run(t, nil, s.cmd("copy", "--partsize", "1MiB", "--multipart-threshold", "1MiB", down, s.url("up/"))...)
	if r.code != 0 {
		t.Fatalf("copy up: exit %d\n%s", r.code, r.stderr)
	}
	if n := s.emu.SessionsCreated() - before; n != 1 {
		t.Errorf("copy up made %d sessions, want 1 shared by its uploads", n)
	}
	// Server-side copies within the directory bucket, out to a general
	// purpose bucket and back in: S3 supports them all.
	for _, cp := range [][2]string{{s.url("up/"), "s3://general/out/"}, {"s3://general/out/", s.url("in/")}, {s.url("in/"), s.url("again/")}} {
		r = run(t, nil, s.cmd("copy", cp[0], cp[1])...)
		if r.code != 0 {
			t.Fatalf("server-side copy %s to %s: exit %d\n%s", cp[0], cp[1], r.code, r.stderr)
		}
	}
	back := t.TempDir()
	r = run(t, nil, s.cmd("get", s.url("again/"), back)...)
	if r.code != 0 {
		t.Fatalf("get what was copied up: exit %d\n%s", r.code, r.stderr)
	}
	sameTree(t, back, want)
}

// TestDirectoryBucketRefusals checks that what a directory bucket lacks
// is refused in one line, exit 2, before any request.
func TestDirectoryBucketRefusals(t *testing.T) {
	s := dirStore(t, s3emu.Options{Buckets: []string{"general"}})
	src := t.TempDir()
	writeFiles(t, src, map[string][]byte{"f": []byte("x")})
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"version id", s.cmd("get", "--version-id", "v1", s.url("data/k"), t.TempDir()), "--version-id: directory bucket " + dirBucket + " has no versioning"},
		{"SSE-C", s.cmd("get", "--sse-c-key", "0123456789abcdef0123456789abcdef", s.url("data/"), t.TempDir()), "does not support customer-provided keys"},
		{"requester pays", s.cmd("get", "--request-payer", "requester", s.url("data/"), t.TempDir()), "does not support request-payer"},
		{"storage class", s.cmd("copy", "--storage-class", "STANDARD_IA", src, s.url("up/")), "stores only EXPRESS_ONEZONE"},
		{"no region", []string{"get", "--quiet", s.url("data/"), t.TempDir()}, "no region: set --region or the profile's region (the zone id use1-az4"},
		{"anonymous", append(s.cmd("get", s.url("data/"), t.TempDir()), "--no-sign-request"), "anonymous requests are not supported"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s.emu.ResetStats()
			r := run(t, nil, tc.args...)
			if r.code != 2 || !strings.Contains(r.stderr, tc.want) || strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 {
				t.Errorf("exit %d, stderr %q; want exit 2 and one line with %q", r.code, r.stderr, tc.want)
			}
			if n := s.emu.Stats().Requests; n != 0 {
				t.Errorf("%d requests reached the store, want none", n)
			}
		})
	}
}

// TestDirectoryBucketListingRules checks the prefix rule (a prefix
// without a trailing "/" lists its parent and filters) and that a dry
// run prints in key order from an unordered listing.
func TestDirectoryBucketListingRules(t *testing.T) {
	s := dirStore(t, s3emu.Options{})
	want := dirData(t, s)
	r := run(t, nil, s.cmd("ls", s.url("data/a"))...)
	if r.code != 0 || strings.TrimSpace(r.stdout) != "PRE a/" {
		t.Errorf("ls data/a: exit %d, %q, want just PRE a/\n%s", r.code, r.stdout, r.stderr)
	}
	r = run(t, nil, s.cmd("ls", "--recursive", s.url("data/a/t"))...)
	if r.code != 0 || !strings.HasSuffix(strings.TrimSpace(r.stdout), "data/a/two") || strings.Count(r.stdout, "\n") != 1 {
		t.Errorf("ls --recursive data/a/t: exit %d, %q, want data/a/two alone\n%s", r.code, r.stdout, r.stderr)
	}
	r = run(t, nil, s.cmd("du", s.url("data/a/t"))...)
	if r.code != 0 || !strings.Contains(r.stdout, "100000") {
		t.Errorf("du data/a/t: exit %d, %q, want the 100000 bytes of data/a/two\n%s", r.code, r.stdout, r.stderr)
	}
	dest := t.TempDir()
	r = run(t, nil, s.cmd("get", s.url("data/a/t*"), dest)...)
	if r.code != 0 {
		t.Fatalf("get data/a/t*: exit %d\n%s", r.code, r.stderr)
	}
	sameTree(t, dest, map[string][]byte{"two": want["a/two"]})
	for i := range 20 {
		s.put(t, fmt.Sprintf("many/%02d", (i*7)%20), []byte{byte(i)})
	}
	r = run(t, nil, s.cmd("get", "--dry-run", "--json", "--workers", "1", s.url("many/"), t.TempDir())...)
	if r.code != 0 {
		t.Fatalf("dry run: exit %d\n%s", r.code, r.stderr)
	}
	var keys []string
	for _, line := range strings.Split(r.stdout, "\n") {
		var l struct{ Type, Key string }
		if json.Unmarshal([]byte(line), &l) == nil && l.Key != "" {
			keys = append(keys, l.Key)
		}
	}
	if len(keys) != 20 || !slices.IsSorted(keys) {
		t.Errorf("dry run printed %q, want the 20 keys in order", keys)
	}
}

// TestDirectoryBucketLongRunAndResume interrupts a download from a
// directory bucket whose sessions live 2 s, then resumes it in a run
// paced to last several lifetimes: the sessions are renewed in the
// background and no request is refused for an expired one.
func TestDirectoryBucketLongRunAndResume(t *testing.T) {
	const size = 16 << 20
	s := dirStore(t, s3emu.Options{SessionLifetime: 2 * time.Second, ConnRate: 1 << 20})
	data := randomBytes(36, size)
	s.put(t, "big/00000000", data)
	dest := t.TempDir()
	args := s.cmd("get", "--partsize", "1MiB", "--threads", "2", s.url("big/"), dest)
	cmd, stderr := startGet(t, args...)
	waitForJournal(t, dest)
	cmd.Process.Signal(syscall.SIGINT)
	if err := cmd.Wait(); cmd.ProcessState.ExitCode() != 130 {
		t.Fatalf("interrupted run: %v, want exit 130\n%s", err, stderr)
	}
	done := journaled(t, dest)
	resetAfterDrain(t, s.emu)
	before := s.emu.SessionsCreated()
	start := time.Now()
	r := run(t, nil, s.cmd("get", "--json", "--partsize", "1MiB", "--threads", "2", s.url("big/"), dest)...)
	took := time.Since(start)
	if r.code != 0 {
		t.Fatalf("resumed run: exit %d\n%s", r.code, r.stderr)
	}
	if sent := s.emu.BytesSentFor(s.bucket, "big/00000000"); sent != size-done {
		t.Errorf("resumed run fetched %d bytes, want the %d the journal lacked", sent, size-done)
	}
	got, err := os.ReadFile(finalName(dest))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("resumed file differs from the object (%v)", err)
	}
	lifetimes := int64(took / (2 * time.Second))
	t.Logf("resumed run: %s, %d sessions", took.Round(time.Millisecond), s.emu.SessionsCreated()-before)
	if n := s.emu.SessionsCreated() - before; took > 4*time.Second && n < lifetimes {
		t.Errorf("a %s run made %d sessions, want at least %d (one per lifetime)", took.Round(time.Millisecond), n, lifetimes)
	}
	if took < 4*time.Second {
		t.Errorf("the resumed run took %s, want one longer than two session lifetimes (the pacing failed)", took)
	}
	summaries := 0
	for _, line := range strings.Split(r.stdout, "\n") {
		var l map[string]any
		if json.Unmarshal([]byte(line), &l) != nil {
			continue
		}
		if n, ok := l["retries"].(float64); ok {
			summaries++
			if n != 0 {
				t.Errorf("%v requests retried across the renewals: %s", n, line)
			}
		}
	}
	if summaries == 0 || strings.Contains(r.stdout+r.stderr, "ExpiredToken") {
		t.Errorf("no summary with retries, or a request refused for an expired session:\n%s", r.stdout)
	}
}

// TestDirectoryBucketShardAndManifest splits a directory bucket's
// unordered listing into shards that cover it exactly, and reads a
// manifest's objects from it.
func TestDirectoryBucketShardAndManifest(t *testing.T) {
	s := dirStore(t, s3emu.Options{})
	want := map[string][]byte{}
	for i := range 24 {
		k := fmt.Sprintf("s/%02d", i)
		want[k] = randomBytes(uint64(100+i), 1000*(i+1))
		s.put(t, k, want[k])
	}
	got := map[string]string{}
	for k := range 3 {
		dest := t.TempDir()
		r := run(t, nil, s.cmd("get", "--shard", fmt.Sprintf("%d/3", k), s.url("s/"), dest)...)
		if r.code != 0 {
			t.Fatalf("shard %d/3: exit %d\n%s", k, r.code, r.stderr)
		}
		for name, h := range tree(t, dest) {
			if _, twice := got[name]; twice {
				t.Errorf("%s is in two shards", name)
			}
			got[name] = h
		}
	}
	if len(got) != len(want) {
		t.Errorf("the shards hold %d objects, want %d", len(got), len(want))
	}
	for k, v := range want {
		if got[strings.TrimPrefix(k, "s/")] != sum(v) {
			t.Errorf("%s: missing or different in the shards", k)
		}
	}
	man := writeFile(t, "s/03\ns/17\n")
	dest := t.TempDir()
	r := run(t, nil, s.cmd("get", "--manifest", man, s.url("s/"), dest)...)
	if r.code != 0 {
		t.Fatalf("manifest: exit %d\n%s", r.code, r.stderr)
	}
	sameTree(t, dest, map[string][]byte{"03": want["s/03"], "17": want["s/17"]})
}

// TestDirectoryBucketBench runs s3pd bench against a directory bucket.
func TestDirectoryBucketBench(t *testing.T) {
	s := dirStore(t, s3emu.Options{})
	for i := range 4 {
		s.put(t, fmt.Sprintf("d/%02d", i), randomBytes(uint64(i), 2*mib))
	}
	s.emu.ResetStats()
	r := run(t, nil, s.cmd("bench", "--json", "--partsize", "1MiB", s.url("d/"))...)
	if r.code != 0 {
		t.Fatalf("bench: exit %d\n%s", r.code, r.stderr)
	}
	if got := s.emu.Stats().BytesSent; got < 8*mib {
		t.Errorf("bench read %d bytes, want the 8 MiB of the prefix", got)
	}
}

// TestDirectoryBucketSessionDenied checks that a CreateSession refused
// (no s3express:CreateSession permission) stops the run at once, exit 2,
// with one line that names the permission.
func TestDirectoryBucketSessionDenied(t *testing.T) {
	faults, err := s3emu.ParseFaults("method=SESSION key=* times=-1 action=status:403:AccessDenied")
	if err != nil {
		t.Fatal(err)
	}
	s := dirStore(t, s3emu.Options{Faults: faults})
	r := run(t, nil, s.cmd("get", s.url("data/"), t.TempDir())...)
	if r.code != 2 || !strings.Contains(r.stderr, "the credentials need s3express:CreateSession on the bucket") || strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 {
		t.Errorf("exit %d, stderr %q; want exit 2 and one line naming s3express:CreateSession", r.code, r.stderr)
	}
}
