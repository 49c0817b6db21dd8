package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3pd/s3pd/pkg/s3emu"
)

// writeTree writes files (name -> content) under dir.
func writeTree(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// keys lists every key under prefix in s's bucket.
func (s *store) keys(t *testing.T, prefix string) []string {
	t.Helper()
	var out []string
	pages := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{Bucket: aws.String(s.bucket), Prefix: aws.String(prefix)})
	for pages.HasMorePages() {
		p, err := pages.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range p.Contents {
			out = append(out, aws.ToString(o.Key))
		}
	}
	return out
}

func (s *store) get(t *testing.T, key string) []byte {
	t.Helper()
	out, err := s.client.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	defer out.Body.Close()
	b := make([]byte, 0, aws.ToInt64(out.ContentLength))
	buf := make([]byte, 32<<10)
	for {
		n, err := out.Body.Read(buf)
		b = append(b, buf[:n]...)
		if err != nil {
			return b
		}
	}
}

// TestCopyUploadMetadata: the AWS CLI's metadata flags reach every
// uploaded object, single-part and multipart, and a server-side copy
// replaces the source's metadata with them.
func TestCopyUploadMetadata(t *testing.T) {
	stores(t, func(t *testing.T, s *store) {
		src := t.TempDir()
		// moto refuses parts under 5 MiB but the last.
		writeTree(t, src, map[string][]byte{"small.bin": randomBytes(71, 1000), "large.bin": randomBytes(72, 6*mib)})
		flags := []string{"--partsize", "5MiB", "--multipart-threshold", "5MiB",
			"--content-type", "application/x-test", "--cache-control", "max-age=60",
			"--content-disposition", "attachment", "--content-encoding", "identity",
			"--metadata", "a=1,b=two", "--metadata", "c=3"}
		if r := run(t, nil, s.cmd("copy", append(flags, src, s.url("meta/"))...)...); r.code != 0 {
			t.Fatalf("upload: exit %d\n%s", r.code, r.stderr)
		}
		if r := run(t, nil, s.cmd("copy", "--cache-control", "no-store", "--metadata", "d=4", s.url("meta/small.bin"), s.url("copied/small.bin"))...); r.code != 0 {
			t.Fatalf("server-side copy: exit %d\n%s", r.code, r.stderr)
		}
		check := func(key, cacheControl string, meta map[string]string) {
			out, err := s.client.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
			if err != nil {
				t.Fatalf("head %s: %v", key, err)
			}
			// The emulator (gofakes3) keeps no Cache-Control.
			if got := aws.ToString(out.CacheControl); got != cacheControl && s.emu == nil {
				t.Errorf("%s: Cache-Control %q, want %q", key, got, cacheControl)
			}
			for k, v := range meta {
				if out.Metadata[k] != v {
					t.Errorf("%s: metadata %s=%q, want %q (all: %v)", key, k, out.Metadata[k], v, out.Metadata)
				}
			}
			if cacheControl == "max-age=60" {
				if aws.ToString(out.ContentType) != "application/x-test" || aws.ToString(out.ContentDisposition) != "attachment" || aws.ToString(out.ContentEncoding) != "identity" {
					t.Errorf("%s: type %q, disposition %q, encoding %q", key, aws.ToString(out.ContentType), aws.ToString(out.ContentDisposition), aws.ToString(out.ContentEncoding))
				}
			}
		}
		check("meta/small.bin", "max-age=60", map[string]string{"a": "1", "b": "two", "c": "3"})
		check("meta/large.bin", "max-age=60", map[string]string{"a": "1", "b": "two", "c": "3"})
		check("copied/small.bin", "no-store", map[string]string{"d": "4"})
	})
}

// TestCopyNoClobberAndDelete: --no-clobber keeps what DEST has; --delete
// removes what SRC does not have, under DEST's prefix only and never a
// name the rules leave out.
func TestCopyNoClobberAndDelete(t *testing.T) {
	stores(t, func(t *testing.T, s *store) {
		src := t.TempDir()
		files := map[string][]byte{"a": randomBytes(81, 100), "d/b": randomBytes(82, 200)}
		writeTree(t, src, files)
		s.put(t, "up/a", []byte("old"))
		s.put(t, "up/stale", []byte("s"))
		s.put(t, "up/keep.log", []byte("k"))
		s.put(t, "outside", []byte("o"))
		if r := run(t, nil, s.cmd("copy", "--no-clobber", src, s.url("up/"))...); r.code != 0 {
			t.Fatalf("--no-clobber: exit %d\n%s", r.code, r.stderr)
		}
		if got := string(s.get(t, "up/a")); got != "old" {
			t.Errorf("--no-clobber replaced up/a: %q", got)
		}
		r := run(t, nil, s.cmd("copy", "--delete", "--dry-run", "--exclude", "*.log", src, s.url("up/"))...)
		if r.code != 0 {
			t.Fatalf("--delete --dry-run: exit %d\n%s", r.code, r.stderr)
		}
		// It names where each object would go, and sums up its skips.
		if !strings.Contains(r.stdout, "would copy: "+filepath.Join(src, "a")+" -> "+s.url("up/a")+" (100 bytes)") || strings.Count(r.stdout, "would skip") > 1 {
			t.Errorf("--delete --dry-run printed:\n%s", r.stdout)
		}
		if got := s.keys(t, ""); len(got) != 5 {
			t.Errorf("--dry-run deleted: %v", got)
		}
		if r := run(t, nil, s.cmd("copy", "--delete", "--exclude", "*.log", src, s.url("up/"))...); r.code != 0 {
			t.Fatalf("--delete: exit %d\n%s", r.code, r.stderr)
		}
		if got, want := s.keys(t, ""), []string{"outside", "up/a", "up/d/b", "up/keep.log"}; !slices.Equal(got, want) {
			t.Errorf("after --delete: %v, want %v", got, want)
		}
		if got := s.get(t, "up/a"); string(got) != string(files["a"]) {
			t.Errorf("up/a not replaced without --no-clobber")
		}
		t.Run("local to local", func(t *testing.T) {
			dst := t.TempDir()
			writeTree(t, dst, map[string][]byte{"a": []byte("old"), "gone": []byte("g")})
			if r := run(t, nil, "copy", "--quiet", "--no-clobber", "--delete", src, dst); r.code != 0 {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
			}
			sameTree(t, dst, map[string][]byte{"a": []byte("old"), "d/b": files["d/b"]})
		})
		t.Run("S3 to S3", func(t *testing.T) {
			s.put(t, "mirror/extra", []byte("x"))
			if r := run(t, nil, s.cmd("copy", "--delete", s.url("up/d/"), s.url("mirror/"))...); r.code != 0 {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
			}
			if got, want := s.keys(t, "mirror/"), []string{"mirror/b"}; !slices.Equal(got, want) {
				t.Errorf("mirror: %v, want %v", got, want)
			}
		})
	})
}

// TestCopyFollowsSymlinks: as the AWS CLI, copy follows symbolic links
// unless --no-follow-symlinks.
func TestCopyFollowsSymlinks(t *testing.T) {
	src := t.TempDir()
	data := randomBytes(91, 500)
	writeTree(t, src, map[string][]byte{"f": data})
	if err := os.Symlink("f", filepath.Join(src, "link")); err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	if r := run(t, nil, "copy", "--quiet", src, dst); r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	sameTree(t, dst, map[string][]byte{"f": data, "link": data})
	dst = t.TempDir()
	if r := run(t, nil, "copy", "--quiet", "--no-follow-symlinks", src, dst); r.code != 0 {
		t.Fatalf("--no-follow-symlinks: exit %d\n%s", r.code, r.stderr)
	}
	sameTree(t, dst, map[string][]byte{"f": data})
}

// viaGetAndCopy runs test once as get and once as copy: a copy from S3 to
// a local folder is get, so every check holds for both.
func viaGetAndCopy(t *testing.T, test func(t *testing.T, verb string)) {
	for _, verb := range []string{"get", "copy"} {
		t.Run(verb, func(t *testing.T) { test(t, verb) })
	}
}

// TestCopyToLocalVersionID: --version-id reaches every request for the
// object, and names one object only.
func TestCopyToLocalVersionID(t *testing.T) {
	viaGetAndCopy(t, func(t *testing.T, verb string) {
		s := emuStore(t, s3emu.Options{Dataset: "g:2:1MiB", LogRequests: true})
		dest := t.TempDir()
		// The emulator's objects are each their one version, "null".
		if r := run(t, nil, s.cmd(verb, "--version-id", "null", s.url("g/00000001"), dest+"/")...); r.code != 0 {
			t.Fatalf("--version-id null: exit %d\n%s", r.code, r.stderr)
		}
		checkSynthetic(t, filepath.Join(dest, "00000001"), "g/00000001", 1<<20)
		asked := 0
		for _, req := range s.emu.Log() {
			if req.Key != "g/00000001" {
				continue
			}
			asked++
			if !strings.Contains(req.Query, "versionId=null") {
				t.Errorf("%s %s?%s: no versionId", req.Method, req.Key, req.Query)
			}
		}
		if asked == 0 {
			t.Errorf("no request for g/00000001")
		}
		r := run(t, nil, s.cmd(verb, "--version-id", "null", s.url("g/"), t.TempDir())...)
		if r.code != 2 || !strings.Contains(r.stderr, "--version-id names one object") {
			t.Errorf("--version-id of a prefix: exit %d, want 2 and get's reason\n%s", r.code, r.stderr)
		}
	})
}

// TestCopyToLocalNoResume: a run killed midway leaves a journaled
// partial file; a rerun with --no-resume fetches the whole object again
// instead of what the journal lacks.
func TestCopyToLocalNoResume(t *testing.T) {
	const size = 24 << 20
	viaGetAndCopy(t, func(t *testing.T, verb string) {
		s := emuStore(t, s3emu.Options{Dataset: "big:1:24MiB", ConnRate: 3 << 20})
		dest := t.TempDir()
		args := func(extra ...string) []string {
			return s.cmd(verb, append(extra, "--partsize", "1MiB", "--threads", "4", s.url("big/"), dest)...)
		}
		cmd, _ := startGet(t, args()...)
		waitForJournaled(t, dest, 2<<20)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		if done := journaled(t, dest); done <= 0 || done >= size {
			t.Fatalf("journal records %d bytes, want part of %d", done, size)
		}
		resetAfterDrain(t, s.emu)
		if r := run(t, nil, args("--no-resume")...); r.code != 0 {
			t.Fatalf("--no-resume: exit %d\n%s", r.code, r.stderr)
		}
		if sent := s.emu.BytesSentFor(s.bucket, "big/00000000"); sent < size {
			t.Errorf("--no-resume fetched %d bytes, want the whole %d: it resumed", sent, size)
		}
		checkSynthetic(t, finalName(dest), "big/00000000", size)
		tree(t, dest)
	})
}

// TestCopyToLocalVerifyExisting: a damaged file with its object's size
// and mtime is trusted by a plain rerun; --verify-existing finds it and
// fetches that object alone again.
func TestCopyToLocalVerifyExisting(t *testing.T) {
	const size = 2 << 20
	viaGetAndCopy(t, func(t *testing.T, verb string) {
		s := emuStore(t, s3emu.Options{Dataset: "v:3:2MiB"})
		dest := t.TempDir()
		args := func(extra ...string) []string {
			return s.cmd(verb, append(extra, "--partsize", "1MiB", s.url("v/"), dest)...)
		}
		if r := run(t, nil, args()...); r.code != 0 {
			t.Fatalf("first run: exit %d\n%s", r.code, r.stderr)
		}
		damaged := filepath.Join(dest, "00000001")
		st, err := os.Stat(damaged)
		if err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(damaged, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteAt(make([]byte, 4096), 1<<20)
		f.Close()
		os.Chtimes(damaged, st.ModTime(), st.ModTime())
		s.emu.ResetStats()
		if r := run(t, nil, args()...); r.code != 0 || s.emu.Stats().BytesSent > 64<<10 {
			t.Fatalf("plain rerun: exit %d, %d bytes sent; want 0 and no object fetched\n%s", r.code, s.emu.Stats().BytesSent, r.stderr)
		}
		s.emu.ResetStats()
		if r := run(t, nil, args("--verify-existing")...); r.code != 0 {
			t.Fatalf("--verify-existing: exit %d\n%s", r.code, r.stderr)
		}
		for i := range 3 {
			key := fmt.Sprintf("v/%08d", i)
			checkSynthetic(t, filepath.Join(dest, fmt.Sprintf("%08d", i)), key, size)
			sent, want := s.emu.BytesSentFor(s.bucket, key), int64(0)
			if i == 1 {
				want = size
			}
			if sent != want {
				t.Errorf("%s: %d bytes fetched, want %d", key, sent, want)
			}
		}
	})
}

// TestCopyToLocalReport: --report writes the run's page and says where;
// one inside DEST is refused before any request.
func TestCopyToLocalReport(t *testing.T) {
	viaGetAndCopy(t, func(t *testing.T, verb string) {
		s := emuStore(t, s3emu.Options{Dataset: "g:2:1MiB"})
		dir := t.TempDir()
		page := filepath.Join(dir, verb+".html")
		r := run(t, nil, s.cmd(verb, "--report", page, s.url("g/"), filepath.Join(dir, "out"))...)
		if r.code != 0 || !strings.Contains(r.stdout, "report: "+page+"\n") {
			t.Fatalf("--report: exit %d, stdout lacks %q\n%s%s", r.code, "report: "+page, r.stdout, r.stderr)
		}
		if b, err := os.ReadFile(page); err != nil || !strings.Contains(string(b), `id="chart-throughput"`) {
			t.Errorf("the report: %v\n%.300s", err, b)
		}
		s.emu.ResetStats()
		inDest := filepath.Join(dir, "dest")
		r = run(t, nil, s.cmd(verb, "--report", filepath.Join(inDest, "r.html"), s.url("g/"), inDest)...)
		if r.code != 2 || !strings.Contains(r.stderr, "inside DEST") || s.emu.Stats().Requests != 0 {
			t.Errorf("a report inside DEST: exit %d, %d requests; want 2, a reason and none\n%s", r.code, s.emu.Stats().Requests, r.stderr)
		}
	})
}

// TestCopyToLocalConflictSuffix: a key that is both an object and a
// prefix lands as NAME+SUFFIX.
func TestCopyToLocalConflictSuffix(t *testing.T) {
	viaGetAndCopy(t, func(t *testing.T, verb string) {
		s := emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory})
		objs := map[string][]byte{"a": randomBytes(1, 100), "a/b": randomBytes(2, 200)}
		for k, v := range objs {
			s.put(t, "p/"+k, v)
		}
		dest := t.TempDir()
		if r := run(t, nil, s.cmd(verb, "--conflict-suffix", ".obj", s.url("p/"), dest)...); r.code != 0 {
			t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		sameTree(t, dest, map[string][]byte{"a.obj": objs["a"], "a/b": objs["a/b"]})
	})
}
