package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3pd/s3pd/pkg/s3emu"
)

// putIn stores data at bucket/key.
func (s *store) putIn(t *testing.T, bucket, key string, data []byte) {
	t.Helper()
	_, err := s.client.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(data)})
	if err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, data string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "manifest")
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// wantSynthetic is the synthetic content of keys, named under prefix.
func wantSynthetic(t *testing.T, ds s3emu.Dataset, prefix string, keys ...string) map[string][]byte {
	want := map[string][]byte{}
	for _, k := range keys {
		size, ok := ds.Lookup(k)
		if !ok {
			t.Fatalf("%s is not in the dataset", k)
		}
		b := make([]byte, size)
		s3emu.SyntheticBytes(k, 0, b)
		want[strings.TrimPrefix(k, prefix)] = b
	}
	return want
}

func TestManifestReplacesTheListing(t *testing.T) {
	const dataset = "d:20:100KiB,d/sub:3:2MiB,e:5:1KiB"
	s := emuStore(t, s3emu.Options{Dataset: dataset, Buckets: []string{"inv"}})
	ds, _ := s3emu.ParseDataset(dataset)
	man := "# three of d\n\ns3://bench/d/00000001\t102400\nd/00000007\nd/sub/00000002\t2097152\n"
	want := wantSynthetic(t, ds, "d/", "d/00000001", "d/00000007", "d/sub/00000002")
	s.putIn(t, "inv", "lists/three.txt", []byte(man))

	for _, tc := range []struct {
		name, location string
		stdin          string
	}{
		{"local file", writeFile(t, man), ""},
		{"stdin", "-", man},
		{"in S3", "s3://inv/lists/three.txt", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s.emu.ResetStats()
			dest := t.TempDir()
			c := exec.Command(bin, append(s.cmd("get", "--manifest", tc.location, "--partsize", "1MiB"), s.url("d"), dest)...)
			c.Env = baseEnv(t)
			c.Stdin = strings.NewReader(tc.stdin)
			out, err := c.CombinedOutput()
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			sameTree(t, dest, want)
			if n := s.emu.Stats().ListRequests; n != 0 {
				t.Fatalf("%d listing requests, want none", n)
			}
		})
	}
}

func TestManifestErrors(t *testing.T) {
	s := emuStore(t, s3emu.Options{Dataset: "d:3:1KiB"})
	for _, tc := range []struct {
		name, man string
		args      []string
		want      string
	}{
		{"a key outside the prefix", "d/00000000\nother/x\n", nil, "line 2: key \"other/x\" is not under s3://bench/d/"},
		{"another bucket", "s3://elsewhere/d/00000000\n", nil, "line 1: s3://elsewhere/d/00000000 is not in bucket bench"},
		{"a bad size", "d/00000000\tbig\n", nil, "line 1: size"},
		{"with --delete", "d/00000000\n", []string{"--delete"}, "--delete with --manifest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dest := t.TempDir()
			args := append(s.cmd("get", "--manifest", writeFile(t, tc.man)), tc.args...)
			r := run(t, nil, append(args, s.url("d/"), dest)...)
			if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q; want exit 2 with %q", r.code, r.stderr, tc.want)
			}
		})
	}
	r := run(t, nil, append(s.cmd("get", "--manifest", "/nonexistent/manifest"), s.url("d/"), t.TempDir())...)
	if r.code != 2 || !strings.Contains(r.stderr, "/nonexistent/manifest") {
		t.Fatalf("missing manifest: exit %d, %q", r.code, r.stderr)
	}
}

func gzipped(t *testing.T, s string) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	io.WriteString(w, s)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestInventoryInS3(t *testing.T) {
	const dataset = "d:6:300KiB,x y:2:1KiB"
	s := emuStore(t, s3emu.Options{Dataset: dataset, Buckets: []string{"inv"}})
	ds, _ := s3emu.ParseDataset(dataset)
	manifestJSON := `{"sourceBucket": "bench", "destinationBucket": "arn:aws:s3:::inv", "fileFormat": "CSV",
	  "fileSchema": "Bucket, Key, VersionId, IsLatest, IsDeleteMarker, Size, LastModifiedDate, ETag",
	  "files": [{"key": "bench/cfg/data/a.csv.gz"}, {"key": "bench/cfg/data/b.csv.gz"}]}`
	// Row 1 is as listed; row 2 has gone stale (another ETag and size):
	// it is looked up again, not failed; rows 3 and 4 are an old version
	// and a delete marker; "x y" is percent-encoded with a plus.
	a := `"bench","d%2F00000000","","true","false","307200","2026-01-01T00:00:00.000Z","` + etagOf(t, s, "d/00000000") + `"
"bench","d%2F00000001","","true","false","999","2026-01-01T00:00:00.000Z","0000000000000000000000000000dead"
"bench","d%2F00000002","v1","false","false","307200","2026-01-01T00:00:00.000Z","aa"
"bench","d%2F00000003","v2","true","true","","2026-01-01T00:00:00.000Z",""
`
	b := `"bench","x+y%2F00000001","","true","false","1024","2026-01-01T00:00:00.000Z",""
`
	s.putIn(t, "inv", "bench/cfg/2026-01-02T00-00Z/manifest.json", []byte(manifestJSON))
	s.putIn(t, "inv", "bench/cfg/data/a.csv.gz", gzipped(t, a))
	s.putIn(t, "inv", "bench/cfg/data/b.csv.gz", gzipped(t, b))
	s.emu.ResetStats()
	dest := t.TempDir()
	r := run(t, nil, append(s.cmd("get", "--manifest", "s3://inv/bench/cfg/2026-01-02T00-00Z/manifest.json"), s.url(""), dest)...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	sameTree(t, dest, wantSynthetic(t, ds, "", "d/00000000", "d/00000001", "x y/00000001"))
	if n := s.emu.Stats().ListRequests; n != 0 {
		t.Fatalf("%d listing requests, want none", n)
	}
}

// etagOf is the emulator's ETag of key in the test's bucket.
func etagOf(t *testing.T, s *store, key string) string {
	out, err := s.client.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Trim(aws.ToString(out.ETag), `"`)
}

func TestManifestShardsBalanceLargeSets(t *testing.T) {
	// 50 GiB of 1, 4, 16 and 64 MiB objects, planned from the sizes in
	// the manifest: a dry run sends no request at all.
	s := emuStore(t, s3emu.Options{Dataset: "d:1:1"})
	var man strings.Builder
	sizes := []int64{1 << 20, 4 << 20, 16 << 20, 64 << 20}
	var total int64
	for i := 0; total < 50<<30; i++ {
		size := sizes[(i*7+i/3)%4]
		fmt.Fprintf(&man, "big/%06d\t%d\n", i, size)
		total += size
	}
	path := writeFile(t, man.String())
	var args [][]string
	for k := range 4 {
		args = append(args, s.cmd("get", "--json", "--dry-run", "--manifest", path, "--shard", fmt.Sprintf("%d/4", k), s.url("big/"), t.TempDir()))
	}
	var sum int64
	for k, r := range runAll(t, nil, args) {
		if r.code != 0 {
			t.Fatalf("shard %d: exit %d\n%s", k, r.code, r.stderr)
		}
		l := lastShardLine(t, r.stdout)
		if l.Shard.ListingBytes != total {
			t.Fatalf("shard %d saw %d bytes, the manifest has %d", k, l.Shard.ListingBytes, total)
		}
		if dev := l.Shard.Share*4 - 1; dev > 0.05 || dev < -0.05 {
			t.Errorf("shard %d/4 has %.2f%% of the bytes, more than 5%% off a quarter", k, l.Shard.Share*100)
		}
		sum += l.Shard.Bytes
	}
	if sum != total {
		t.Fatalf("the shards hold %d bytes, the manifest %d", sum, total)
	}
	if n := s.emu.Stats().Requests; n != 0 {
		t.Fatalf("a dry run from a sized manifest sent %d requests", n)
	}
}

// millionKeys writes a manifest of the dataset m:1000000:1 with sizes.
func millionKeys(w io.Writer, from, to int) {
	var b bytes.Buffer
	for i := from; i < to; i++ {
		fmt.Fprintf(&b, "m/%08d\t1\n", i)
		if b.Len() > 1<<20 {
			w.Write(b.Bytes())
			b.Reset()
		}
	}
	w.Write(b.Bytes())
}

func TestManifestOfAMillionKeysStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("a million-line manifest")
	}
	s := emuStore(t, s3emu.Options{Dataset: "m:1000000:1"})

	// Planning does not wait for the manifest: with the first thousand
	// lines written and the rest held back, objects already arrive.
	c := exec.Command(bin, append(s.cmd("get", "--manifest", "-", "--benchmark", "--quiet"), s.url("m/"))...)
	c.Env = baseEnv(t)
	var childErr bytes.Buffer
	c.Stderr = &childErr
	stdin, err := c.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Process.Kill(); c.Wait() }) // a run the test gave up on
	millionKeys(stdin, 0, 1000)
	awaitEmu(t, s.emu, 30*time.Second, "an object fetched while the manifest was still open", func(st s3emu.Stats) bool { return st.GetRequests > 0 })
	t.Logf("first GET %v after start, the manifest still open", time.Since(start))

	// An interrupt ends the run while the manifest is still open, once
	// every line written is fetched and the listing waits on stdin for
	// more: the engine does not wait for a read that ignores it.
	awaitEmu(t, s.emu, 60*time.Second, "the 1000 objects written fetched", func(st s3emu.Stats) bool { return st.GetRequests >= 1000 })
	c.Process.Signal(syscall.SIGINT)
	waitOrDump(t, c, &childErr, 10*time.Second)
	stdin.Close()

	// Reading all of it stays in bounded memory: a dry run of one shard
	// in a thousand reads every line (the split needs the total) and
	// spools them to disk, without the engine's cost per object.
	path := filepath.Join(t.TempDir(), "million")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	millionKeys(f, 0, 1_000_000)
	f.Close()
	c = exec.Command(bin, append(s.cmd("get", "--manifest", path, "--shard", "0/1000", "--dry-run", "--quiet", "--json"), s.url("m/"), t.TempDir())...)
	c.Env = baseEnv(t)
	var stdout bytes.Buffer
	c.Stdout = &stdout
	var stderr bytes.Buffer
	c.Stderr = &stderr
	if err := c.Run(); err != nil {
		t.Fatalf("dry run: %v\n%s", err, stderr.String())
	}
	if l := lastShardLine(t, stdout.String()); l.Shard.ListingObjects != 1_000_000 || l.Shard.Objects != 1000 {
		t.Fatalf("shard 0/1000 of a million lines: %+v", *l.Shard)
	}
	// The process's own peak (VmHWM), not the child's rusage: a child
	// forked from a large test process inherits its parent's peak.
	var peak struct {
		RSS int64 `json:"peak_rss_kib"`
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &peak); err != nil || peak.RSS <= 0 {
		t.Fatalf("no peak_rss_kib in %q: %v", lines[len(lines)-1], err)
	}
	rss := peak.RSS
	t.Logf("1,000,000 manifest lines read and split: peak RSS %d MiB", rss>>10)
	if rss > 128<<10 {
		t.Fatalf("peak RSS %d MiB, want under 128 MiB", rss>>10)
	}
}

// waitOrDump waits for c to exit; when it has not within d, it sends
// SIGQUIT so that the Go runtime prints every goroutine's stack to the
// child's stderr (in errOut), and fails with it.
func waitOrDump(t *testing.T, c *exec.Cmd, errOut *bytes.Buffer, d time.Duration) {
	t.Helper()
	exited := make(chan struct{})
	go func() {
		c.Wait()
		close(exited)
	}()
	select {
	case <-exited:
		return
	case <-time.After(d):
	}
	c.Process.Signal(syscall.SIGQUIT)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		c.Process.Kill()
		<-exited
	}
	t.Fatalf("the child did not exit within %v of SIGINT; its stderr:\n%s", d, errOut.String())
}

// TestManifestKeyListedTwiceIsFetchedOnce: a manifest that names a key
// twice (as a key, as a URL, with and without its size, far apart) gets
// it once, exit 0, as a listing that repeats a key does.
func TestManifestKeyListedTwiceIsFetchedOnce(t *testing.T) {
	s := emuStore(t, s3emu.Options{Dataset: "d:3:100KiB"})
	man := "d/00000001\nd/00000002\ns3://bench/d/00000001\nd/00000000\nd/00000001\t102400\nd/00000002\n"
	for _, shard := range [][]string{nil, {"--shard", "0/1"}} {
		s.emu.ResetStats()
		dest := t.TempDir()
		r := run(t, nil, append(append(s.cmd("get", "--json", "--manifest", writeFile(t, man)), shard...), s.url("d/"), dest)...)
		if r.code != 0 {
			t.Fatalf("%v: exit %d, want 0\n%s\n%s", shard, r.code, r.stdout, r.stderr)
		}
		if n := strings.Count(r.stdout, `"type":"object"`); n != 3 {
			t.Errorf("%v: %d object lines, want 3 (one per key)", shard, n)
		}
		if n := s.emu.Stats().GetRequests; n != 3 {
			t.Errorf("%v: %d GETs, want 3 (each key once)", shard, n)
		}
		ds, _ := s3emu.ParseDataset("d:3:100KiB")
		sameTree(t, dest, wantSynthetic(t, ds, "d/", "d/00000000", "d/00000001", "d/00000002"))
	}
}

// TestHostileManifests: an S3 Inventory and a text manifest, both read
// from s3://, whose entries name keys that cannot land one to one in
// DEST ("..", an absolute key, an empty or "." component, the work
// folder, a control character), a size no object has, and a duplicate.
// Each such entry fails by name (exit 1); the good objects land; nothing
// is written outside DEST. A size that is not a number of bytes is a bad
// manifest: exit 2 naming the line, nothing transferred.
func TestHostileManifests(t *testing.T) {
	const dataset = "d:2:10KiB"
	s := emuStore(t, s3emu.Options{Dataset: dataset, Buckets: []string{"inv"}})
	ds, _ := s3emu.ParseDataset(dataset)
	hostile := []string{"d/../../escape", "/abs", "d//b", "d/./c", "d/.s3pd/lock", "x/.s3pd/j.journal", "d/esc\x1b[2J"}
	esc := url.QueryEscape
	var csvRows strings.Builder
	row := func(key, size string) {
		fmt.Fprintf(&csvRows, "%q,%q,%q\n", "bench", esc(key), size)
	}
	row("d/00000000", "10240")
	for _, k := range hostile {
		row(k, "5")
	}
	row("d/00000001", "10240")
	row("d/00000001", "10240") // listed twice
	row("d/absurd", "9000000000000000000")
	manifestJSON := `{"sourceBucket": "bench", "destinationBucket": "arn:aws:s3:::inv", "fileFormat": "CSV",
	  "fileSchema": "Bucket, Key, Size", "files": [{"key": "hostile/data/a.csv.gz"}]}`
	s.putIn(t, "inv", "hostile/manifest.json", []byte(manifestJSON))
	s.putIn(t, "inv", "hostile/data/a.csv.gz", gzipped(t, csvRows.String()))
	var text strings.Builder
	text.WriteString("d/00000000\t10240\n")
	for _, k := range hostile {
		if !strings.ContainsAny(k, "\n") {
			fmt.Fprintf(&text, "s3://bench/%s\t5\n", k)
		}
	}
	text.WriteString("d/00000001\nd/00000001\t10240\nd/absurd\t9000000000000000000\n")
	s.putIn(t, "inv", "hostile/keys.txt", []byte(text.String()))

	for _, location := range []string{"s3://inv/hostile/manifest.json", "s3://inv/hostile/keys.txt"} {
		t.Run(path.Base(location), func(t *testing.T) {
			root := t.TempDir()
			dest := filepath.Join(root, "dest")
			r := run(t, nil, append(s.cmd("get", "--json", "--no-space-check", "--manifest", location), s.url(""), dest)...)
			if r.code != 1 {
				t.Fatalf("exit %d, want 1\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			failed := map[string]bool{}
			for _, l := range strings.Split(r.stdout, "\n") {
				var m map[string]any
				if json.Unmarshal([]byte(l), &m) == nil && m["type"] == "object" && m["status"] == "failed" {
					failed[fmt.Sprint(m["key"])] = true
				}
			}
			for _, k := range append(hostile, "d/absurd") {
				if !failed[k] {
					t.Errorf("%q is not reported failed", k)
				}
			}
			if strings.Contains(r.stderr, "\x1b") {
				t.Errorf("a raw escape reached stderr")
			}
			sameTree(t, dest, wantSynthetic(t, ds, "", "d/00000000", "d/00000001"))
			if entries, _ := os.ReadDir(root); len(entries) != 1 {
				t.Errorf("something was written outside DEST: %v", entries)
			}
		})
	}
	s.putIn(t, "inv", "hostile/bad-size.txt", []byte("d/00000000\t10240\nd/00000001\t-5\n"))
	dest := t.TempDir()
	r := run(t, nil, append(s.cmd("get", "--manifest", "s3://inv/hostile/bad-size.txt"), s.url(""), dest)...)
	if r.code != 2 || !strings.Contains(r.stderr, "line 2") {
		t.Errorf("a negative size: exit %d, stderr %q; want exit 2 naming line 2", r.code, r.stderr)
	}
	sameTree(t, dest, nil)
}
