package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3pd/s3pd/pkg/local"
	"github.com/s3pd/s3pd/pkg/s3emu"
)

// TestSecondRunIntoTheSameDestIsRefused: while one get writes into DEST,
// a second exits 2 at once naming the first's pid, and touches nothing;
// once the first is killed, a new run takes the lock and finishes.
func TestSecondRunIntoTheSameDestIsRefused(t *testing.T) {
	const size = 48 << 20
	s := emuStore(t, s3emu.Options{Dataset: "big:1:48MiB", ConnRate: 3 << 20})
	dest := t.TempDir()
	args := s.cmd("get", "--partsize", "1MiB", "--threads", "4", s.url("big/"), dest)
	first, _ := startGet(t, args...)
	waitForJournal(t, dest)
	start := time.Now()
	r := run(t, nil, args...)
	want := fmt.Sprintf("is in use by s3pd (pid %d)", first.Process.Pid)
	if r.code != 2 || !strings.Contains(r.stderr, want) {
		t.Fatalf("second run: exit %d, want 2 and %q\n%s", r.code, want, r.stderr)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the second run took %s to give up, want at once", took)
	}
	// A shard of the keys is refused too while a run over all of them holds DEST.
	shardArgs := s.cmd("get", "--partsize", "1MiB", "--shard", "0/2", s.url("big/"), dest)
	if r := run(t, nil, shardArgs...); r.code != 2 || !strings.Contains(r.stderr, want) {
		t.Fatalf("a shard run: exit %d, want 2 and %q\n%s", r.code, want, r.stderr)
	}
	// The refused run must not have disturbed the first's journal.
	first.Process.Signal(syscall.SIGKILL)
	first.Wait()
	done := journaled(t, dest)
	if done <= 0 || done >= size {
		t.Fatalf("journal records %d bytes after the refused run, want part of %d", done, size)
	}
	r = run(t, nil, args...)
	if r.code != 0 {
		t.Fatalf("run after the holder died: exit %d\n%s", r.code, r.stderr)
	}
	checkSynthetic(t, finalName(dest), "big/00000000", size)
	tree(t, dest)
}

// TestKeysCannotReachPartialFiles: a key named like another key's partial
// file (as s3pd once named them beside the object) is an ordinary object,
// and a key inside the work folder is refused by name; the real object is
// whole either way.
func TestKeysCannotReachPartialFiles(t *testing.T) {
	s := emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory})
	real := randomBytes(7, 3<<20+123)
	old := sha256.Sum256([]byte("x/a"))
	lookalike := "x/.s3pd-" + hex.EncodeToString(old[:8]) + ".partial"
	reserved := local.WorkDir + "/lock"
	objs := map[string][]byte{
		"x/a":     real,
		lookalike: randomBytes(8, 1<<20),
		reserved:  randomBytes(9, 3<<20+123),
	}
	for k, v := range objs {
		s.put(t, "p/"+k, v)
	}
	dest := t.TempDir()
	r := run(t, nil, s.cmd("get", "--partsize", "1MiB", "--json", s.url("p/"), dest)...)
	if r.code != 1 {
		t.Fatalf("exit %d, want 1 (the reserved key fails)\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout+r.stderr, "reserved name") || !strings.Contains(r.stdout+r.stderr, reserved) {
		t.Errorf("no per-object error names %s as reserved:\n%s\n%s", reserved, r.stdout, r.stderr)
	}
	delete(objs, reserved)
	sameTree(t, dest, objs)
	if _, err := os.Stat(filepath.Join(dest, local.WorkDir)); !os.IsNotExist(err) {
		t.Errorf("work folder after the run: %v", err)
	}
}

// killMidway starts get, waits until a part is journaled, and kills it.
func killMidway(t *testing.T, args []string) {
	t.Helper()
	cmd, _ := startGet(t, args...)
	waitForJournal(t, args[len(args)-1])
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
}

// damageJournaledPart overwrites bytes of the partial file inside a part
// its journal records as done, keeping the file's size and inode.
func damageJournaledPart(t *testing.T, dest string) {
	t.Helper()
	js, _ := filepath.Glob(filepath.Join(dest, local.WorkDir, "*.journal"))
	ps, _ := filepath.Glob(filepath.Join(dest, local.WorkDir, "*.partial"))
	if len(js) != 1 || len(ps) != 1 {
		t.Fatalf("journals %v, partial files %v: want one of each", js, ps)
	}
	b, err := os.ReadFile(js[0])
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var off int64
	if len(lines) < 2 {
		t.Fatalf("journal has no part: %q", b)
	}
	fmt.Sscan(strings.Fields(lines[1])[0], &off)
	f, err := os.OpenFile(ps[0], os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte("these bytes are not the object's"), off+10); err != nil {
		t.Fatal(err)
	}
}

// TestResumeNeverTrustsWhatIsNotOnDisk: a partial file changed between
// runs, and a --no-resume run killed before it journaled anything, must
// not end in a wrong file reported verified: the next run's file is the
// object, byte for byte.
func TestResumeNeverTrustsWhatIsNotOnDisk(t *testing.T) {
	const size = 48 << 20
	for _, tt := range []struct {
		name    string
		between func(t *testing.T, args []string, dest string)
	}{
		{"partial file changed", func(t *testing.T, _ []string, dest string) { damageJournaledPart(t, dest) }},
		{"--no-resume killed", func(t *testing.T, args []string, dest string) {
			nr := append(append([]string{}, args[:len(args)-2]...), "--no-resume", args[len(args)-2], dest)
			cmd, _ := startGet(t, nr...)
			// Killed once it made its partial file, before its first journal batch (1 s).
			eventually(5*time.Second, func() bool {
				fresh, _ := filepath.Glob(filepath.Join(dest, local.WorkDir, "*.partial"))
				return len(fresh) > 0 && journaled(t, dest) == 0
			})
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := emuStore(t, s3emu.Options{Dataset: "big:1:48MiB", ConnRate: 3 << 20})
			dest := t.TempDir()
			args := s.cmd("get", "--partsize", "1MiB", "--threads", "4", "--json", s.url("big/"), dest)
			killMidway(t, args)
			tt.between(t, args, dest)
			r := run(t, nil, args...)
			if r.code != 0 {
				t.Fatalf("rerun: exit %d\n%s", r.code, r.stderr)
			}
			if !strings.Contains(r.stdout, "crc64nvme") {
				t.Errorf("rerun did not verify a CRC64NVME:\n%s", r.stdout)
			}
			checkSynthetic(t, finalName(dest), "big/00000000", size)
			tree(t, dest)
		})
	}
}

// TestConflictCopiesSurviveDelete: the copy of an object that is also a
// prefix (--conflict-suffix) is kept by --delete of the same run and of
// the next; a key that ends in the suffix is refused by name, so it never
// shares a name with a copy.
func TestConflictCopiesSurviveDelete(t *testing.T) {
	s := emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory})
	objs := map[string][]byte{"a": randomBytes(1, 100), "a/b": randomBytes(2, 200), "c": randomBytes(3, 300)}
	for k, v := range objs {
		s.put(t, "p/"+k, v)
	}
	dest := t.TempDir()
	want := map[string][]byte{"a.obj": objs["a"], "a/b": objs["a/b"], "c": objs["c"]}
	for i := range 2 {
		r := run(t, nil, s.cmd("get", "--conflict-suffix", ".obj", "--delete", s.url("p/"), dest)...)
		if r.code != 0 {
			t.Fatalf("run %d: exit %d\n%s\n%s", i, r.code, r.stdout, r.stderr)
		}
		sameTree(t, dest, want)
	}
	s.put(t, "p/a.obj", randomBytes(4, 400))
	r := run(t, nil, s.cmd("get", "--conflict-suffix", ".obj", s.url("p/"), dest)...)
	if r.code != 1 || !strings.Contains(r.stdout+r.stderr, `"a.obj": it ends in --conflict-suffix ".obj"`) {
		t.Fatalf("a key ending in the suffix: exit %d, want 1 and its name refused\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	sameTree(t, dest, want)
}

// TestVerifyExistingRepairsDamagedFiles: a file damaged at its final name
// but with the object's size and mtime is skipped as unchanged by a plain
// rerun; --verify-existing reads it, finds that it differs from the
// object's CRC64NVME and fetches that object alone again.
func TestVerifyExistingRepairsDamagedFiles(t *testing.T) {
	const size = 3 << 20
	s := emuStore(t, s3emu.Options{Dataset: "v:3:3MiB"})
	dest := t.TempDir()
	args := s.cmd("get", "--partsize", "1MiB", s.url("v/"), dest)
	if r := run(t, nil, args...); r.code != 0 {
		t.Fatalf("get: exit %d\n%s", r.code, r.stderr)
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
	f.WriteAt(make([]byte, 4096), 1<<20) // zeroes, as a lost range would leave
	f.Close()
	os.Chtimes(damaged, st.ModTime(), st.ModTime())

	if r := run(t, nil, args...); r.code != 0 {
		t.Fatalf("plain rerun: exit %d\n%s", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(damaged); b[1<<20] != 0 || b[1<<20+4095] != 0 {
		t.Fatalf("a plain rerun was expected to trust size and mtime")
	}

	s.emu.ResetStats()
	r := run(t, nil, append(args[:len(args)-2:len(args)-2], "--verify-existing", "--json", s.url("v/"), dest)...)
	if r.code != 0 {
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
	if !strings.Contains(r.stdout, "verified crc64nvme") {
		t.Errorf("no object was reported verified at its final name:\n%s", r.stdout)
	}
	tree(t, dest)
}

// TestUploadSizelessFile: a /proc file reports size 0; its upload holds
// what reading it gives.
func TestUploadSizelessFile(t *testing.T) {
	want, err := os.ReadFile("/proc/version")
	if st, _ := os.Stat("/proc/version"); err != nil || len(want) == 0 || st.Size() != 0 {
		t.Skip("no size-0 /proc/version here")
	}
	s := emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory})
	if r := run(t, nil, s.cmd("copy", "/proc/version", s.url("pv"))...); r.code != 0 {
		t.Fatalf("copy: exit %d\n%s", r.code, r.stderr)
	}
	out, err := s.client.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String("pv")})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(out.Body)
	out.Body.Close()
	if string(got) != string(want) {
		t.Errorf("uploaded %q, want %q", got, want)
	}
}

// TestUploadRefusesNonUTF8Names: a file whose name is not UTF-8 fails by
// name (no S3 key could hold it, so it could not be fetched back); the
// other files are uploaded.
func TestUploadRefusesNonUTF8Names(t *testing.T) {
	s := emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory})
	src := writeFiles(t, t.TempDir(), map[string][]byte{"ok.txt": []byte("ok"), "bad-\xff\xfe.txt": []byte("bad")})
	r := run(t, nil, s.cmd("copy", src+"/", s.url("p/"))...)
	if r.code != 1 || !strings.Contains(r.stdout+r.stderr, `bad-\xff\xfe.txt`) || !strings.Contains(r.stdout+r.stderr, "UTF-8") {
		t.Fatalf("exit %d, want 1 and the name refused\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	out, err := s.client.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(s.bucket), Prefix: aws.String("p/")})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Contents) != 1 || aws.ToString(out.Contents[0].Key) != "p/ok.txt" {
		var keys []string
		for _, o := range out.Contents {
			keys = append(keys, fmt.Sprintf("%q", aws.ToString(o.Key)))
		}
		t.Errorf("bucket holds %v, want only p/ok.txt", keys)
	}
}

// TestSingleObjectsShareADirectory: downloads of different single objects
// into one directory run together; a second download of the same object
// there is refused.
func TestSingleObjectsShareADirectory(t *testing.T) {
	const size = 48 << 20
	s := emuStore(t, s3emu.Options{Dataset: "big:2:48MiB", ConnRate: 3 << 20})
	dest := t.TempDir() + "/"
	first, _ := startGet(t, s.cmd("get", "--partsize", "1MiB", "--threads", "4", s.url("big/00000000"), dest)...)
	waitForJournal(t, dest)
	same := run(t, nil, s.cmd("get", "--partsize", "1MiB", s.url("big/00000000"), dest)...)
	if want := fmt.Sprintf("pid %d", first.Process.Pid); same.code != 2 || !strings.Contains(same.stderr, want) {
		t.Errorf("the same object again: exit %d, want 2 naming %s\n%s", same.code, want, same.stderr)
	}
	whole := run(t, nil, s.cmd("get", "--partsize", "1MiB", s.url("big/"), dest)...)
	if whole.code != 2 || !strings.Contains(whole.stderr, "in use by s3pd") {
		t.Errorf("the whole prefix: exit %d, want 2\n%s", whole.code, whole.stderr)
	}
	other := run(t, nil, s.cmd("get", "--partsize", "1MiB", "--threads", "16", s.url("big/00000001"), dest)...)
	if other.code != 0 {
		t.Fatalf("another object into the same directory: exit %d\n%s", other.code, other.stderr)
	}
	if err := first.Wait(); err != nil {
		t.Fatalf("first: %v", err)
	}
	checkSynthetic(t, filepath.Join(dest, "00000000"), "big/00000000", size)
	checkSynthetic(t, filepath.Join(dest, "00000001"), "big/00000001", size)
	tree(t, dest)
}

// TestDeleteLeavesNestedRunsAlone: DEST/sub is the DEST of a live run
// while get --delete runs over DEST. --delete removes DEST/sub's files
// that the listing lacks, never its work folder: the nested run's lock
// and partial file stay, a third run into DEST/sub is still refused, and
// the nested run ends with its object whole, exit 0.
func TestDeleteLeavesNestedRunsAlone(t *testing.T) {
	const nested = "n/00000000"
	ts := s3emu.NewTestServer(t, s3emu.Options{Dataset: "top:1:1000,n:1:300000",
		Faults: s3emu.NewFaults(s3emu.Rule{Key: nested, Action: s3emu.Delay{For: 4 * time.Second}})})
	flags := []string{"--endpoint-url", ts.URL, "--region", "us-east-1", "--no-sign-request", "--quiet"}
	dest := t.TempDir()
	sub := filepath.Join(dest, "sub")
	cmd, stderr := startGet(t, append(append([]string{"get"}, flags...), "s3://bench/n/", sub)...)
	if !eventually(30*time.Second, func() bool {
		ps, _ := filepath.Glob(filepath.Join(sub, local.WorkDir, "*.partial"))
		return len(ps) == 1
	}) {
		t.Fatalf("the nested run made no partial file within 30s\n%s", stderr)
	}
	r := run(t, nil, append(append([]string{"get", "--delete"}, flags...), "s3://bench/top/", dest)...)
	if r.code != 0 {
		t.Fatalf("get --delete over DEST: exit %d\n%s", r.code, r.stderr)
	}
	if strings.Contains(r.stdout+r.stderr, local.WorkDir+"/") {
		t.Errorf("--delete names a work folder's file:\n%s%s", r.stdout, r.stderr)
	}
	for _, name := range []string{"lock"} {
		if _, err := os.Stat(filepath.Join(sub, local.WorkDir, name)); err != nil {
			t.Errorf("the nested run's %s after --delete over DEST: %v", name, err)
		}
	}
	third := run(t, nil, append(append([]string{"get"}, flags...), "s3://bench/n/", sub)...)
	if third.code != 2 || !strings.Contains(third.stderr, "in use") {
		t.Errorf("a third run into the nested DEST: exit %d, want 2 (in use)\n%s", third.code, third.stderr)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the nested run: %v\n%s", err, stderr)
	}
	want := make([]byte, 300000)
	s3emu.SyntheticBytes(nested, 0, want)
	if got, err := os.ReadFile(filepath.Join(sub, "00000000")); err != nil || !bytes.Equal(got, want) {
		t.Errorf("the nested run's object: %d bytes, %v; want it whole", len(got), err)
	}
}

// TestKeysThatCannotLandOneToOneFail: one rule for every key that
// cannot map one to one onto a path inside DEST (a leading "/", an empty
// component, "." or "..", a .s3pd component at any depth): refused by
// name, counted failed, exit 1; never dropped, never merged with
// another key (the AWS CLI lands a//b at a/b, beside a real a/b).
func TestKeysThatCannotLandOneToOneFail(t *testing.T) {
	s := emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory})
	bad := []string{"/abs-x", "a//b", "./x", "c/./d", "e/../f", "g/..", ".s3pd/lock", "w/sub/.s3pd/lock", "w/.s3pd"}
	for _, k := range bad {
		s.put(t, k, []byte("bad:"+k))
	}
	s.put(t, "a/b", []byte("the real a/b"))
	s.put(t, "ok/plain", []byte("plain"))
	dest := t.TempDir()
	r := run(t, nil, s.cmd("get", "--json", s.url(""), dest)...)
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	failed := map[string]bool{}
	var summary map[string]any
	for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var m map[string]any
		json.Unmarshal([]byte(l), &m)
		switch {
		case m["type"] == "object" && m["status"] == "failed":
			failed[fmt.Sprint(m["key"])] = true
			if d, ok := m["destination"]; ok {
				t.Errorf("%v: refused, yet its destination is %v", m["key"], d)
			}
		case m["type"] == "summary":
			summary = m
		}
	}
	for _, k := range bad {
		if !failed[k] {
			t.Errorf("%q is not reported failed", k)
		}
		if !strings.Contains(r.stderr, fmt.Sprintf("%q", k)) {
			t.Errorf("stderr does not name %q", k)
		}
	}
	if summary["failed"] != float64(len(bad)) || summary["objects"] != 2.0 {
		t.Errorf("summary objects %v failed %v, want 2 and %d", summary["objects"], summary["failed"], len(bad))
	}
	sameTree(t, dest, map[string][]byte{"a/b": []byte("the real a/b"), "ok/plain": []byte("plain")})
}
