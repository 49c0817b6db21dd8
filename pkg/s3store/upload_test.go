package s3store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3pd/s3pd/pkg/local"
	"github.com/s3pd/s3pd/pkg/s3emu"
	"github.com/s3pd/s3pd/pkg/transfer"
	"github.com/s3pd/s3pd/pkg/transfer/transfertest"
)

const testBucket = "dst"

// emulator starts an in-memory emulator with buckets "bench", "dst" and
// "src", and returns a client for it.
func emulator(t testing.TB) (*s3emu.Server, *s3.Client) {
	t.Helper()
	ts := s3emu.NewTestServer(t, s3emu.Options{Backend: s3emu.BackendMemory, Buckets: []string{testBucket, "src"}})
	return ts.Server, testClient(ts.URL)
}

func testClient(endpoint string) *s3.Client {
	return s3.New(s3.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(endpoint), UsePathStyle: true,
		Credentials: aws.AnonymousCredentials{}, HTTPClient: awshttp.NewBuildableClient(),
	})
}

func randomBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, uint64(n)))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func getObject(t testing.TB, c *s3.Client, bucket, key string) []byte {
	t.Helper()
	out, err := c.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func pendingUploads(t testing.TB, c *s3.Client, bucket string) int {
	t.Helper()
	out, err := c.ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket)})
	if noUploads(err) {
		return 0
	}
	if err != nil {
		t.Fatalf("list uploads: %v", err)
	}
	return len(out.Uploads)
}

// upload runs the engine from a local directory into the bucket.
func upload(t *testing.T, c *s3.Client, dir string, opts UploadOptions, eopts transfer.Options) transfer.Summary {
	t.Helper()
	src, err := local.NewSource(dir, local.SourceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	opts.PartSize, opts.Threshold = eopts.PartSize, eopts.Threshold
	opts.SourceChecksum = func(ctx context.Context, o transfer.Object, alg string) (string, error) {
		return ChecksumOf(ctx, src, o, alg)
	}
	sink := NewUploadSink(c, testBucket, opts)
	eng, err := transfer.New([]transfer.Lane{{Name: "local", Source: src}}, sink, eopts)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := eng.Run(context.Background())
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return sum
}

func TestUploadSizes(t *testing.T) {
	const part = 64 << 10
	sizes := []int{0, 1, part - 1, part, part + 1, 2 * part, 3*part + 5}
	for _, alg := range []string{CRC64NVME, CRC32C} {
		t.Run(alg, func(t *testing.T) {
			_, c := emulator(t)
			dir := t.TempDir()
			want := map[string][]byte{}
			for i, n := range sizes {
				name := "d/f" + strconv.Itoa(n) + ".txt"
				want[name] = randomBytes(n, uint64(i))
				os.MkdirAll(filepath.Join(dir, "d"), 0o755)
				if err := os.WriteFile(filepath.Join(dir, name), want[name], 0o644); err != nil {
					t.Fatal(err)
				}
			}
			eopts := transfer.Options{Workers: 3, Threads: 3, PartSize: part, Threshold: part}
			got := upload(t, c, dir, UploadOptions{Prefix: "p/", ChecksumAlgorithm: alg}, eopts)
			if got.Objects != int64(len(sizes)) || got.Failed != 0 {
				t.Fatalf("summary: got %d uploaded, %d failed, want %d, 0", got.Objects, got.Failed, len(sizes))
			}
			for name, data := range want {
				if b := getObject(t, c, testBucket, "p/"+name); sha256.Sum256(b) != sha256.Sum256(data) {
					t.Errorf("%s: got %d bytes that differ, want %d", name, len(b), len(data))
				}
			}
			head, err := c.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(testBucket), Key: aws.String("p/d/f1.txt")})
			if err != nil || aws.ToString(head.ContentType) != "text/plain; charset=utf-8" {
				t.Errorf("content type: got %q (%v), want text/plain; charset=utf-8", aws.ToString(head.ContentType), err)
			}
			if n := pendingUploads(t, c, testBucket); n != 0 {
				t.Errorf("incomplete uploads: got %d, want 0", n)
			}
			// A rerun finds every object unchanged.
			again := upload(t, c, dir, UploadOptions{Prefix: "p/", ChecksumAlgorithm: alg}, eopts)
			if again.Skipped != int64(len(sizes)) {
				t.Errorf("rerun: got %d skipped, %d uploaded, want %d skipped", again.Skipped, again.Objects, len(sizes))
			}
			// A changed file of the same size is uploaded again.
			changed := randomBytes(part+1, 99)
			os.WriteFile(filepath.Join(dir, "d/f"+strconv.Itoa(part+1)+".txt"), changed, 0o644)
			third := upload(t, c, dir, UploadOptions{Prefix: "p/", ChecksumAlgorithm: alg}, eopts)
			if third.Objects != 1 || third.Skipped != int64(len(sizes)-1) {
				t.Errorf("after a change: got %d uploaded, %d skipped, want 1, %d", third.Objects, third.Skipped, len(sizes)-1)
			}
			if b := getObject(t, c, testBucket, "p/d/f"+strconv.Itoa(part+1)+".txt"); !bytes.Equal(b, changed) {
				t.Errorf("changed object: content differs")
			}
		})
	}
}

// failingSource fails every part at or after failAt with a permanent error.
type failingSource struct {
	transfer.Source
	failAt int64
	opened atomic.Int64
}

func (f *failingSource) Open(ctx context.Context, o *transfer.Object, off, n int64) (*transfer.Body, error) {
	f.opened.Add(1)
	if off >= f.failAt {
		return nil, transfer.Permanent(errors.New("injected read error"))
	}
	return f.Source.Open(ctx, o, off, n)
}

func TestUploadFailureAborts(t *testing.T) {
	const part = 64 << 10
	_, c := emulator(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "big"), randomBytes(10*part, 1), 0o644)
	src, err := local.NewSource(dir, local.SourceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fs := &failingSource{Source: src, failAt: 5 * part}
	sink := NewUploadSink(c, testBucket, UploadOptions{PartSize: part, Threshold: part})
	eng, _ := transfer.New([]transfer.Lane{{Source: fs}}, sink, transfer.Options{Workers: 1, Threads: 2, PartSize: part})
	sum, err := eng.Run(context.Background())
	if err != nil || sum.Failed != 1 {
		t.Fatalf("got %d failed (%v), want 1", sum.Failed, err)
	}
	if n := pendingUploads(t, c, testBucket); n != 0 {
		t.Errorf("incomplete uploads after a failure: got %d, want 0", n)
	}
	if _, err := c.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(testBucket), Key: aws.String("big")}); err == nil {
		t.Errorf("a failed upload is visible")
	}
}

// fileIdentity identifies a local file by its size and modification time,
// as the job layer does (with its device and inode too).
func fileIdentity(o transfer.Object) string {
	return strconv.FormatInt(o.Size, 10) + "@" + o.ModTime.UTC().Format(time.RFC3339Nano)
}

// TestUploadInterruptKeepsAndResumes: an interrupted multipart upload
// stays, with its journal, and the next run sends only the parts S3
// does not have (the emulator lists no part checksums: the journal's
// are what let a part be kept), completes it and leaves nothing behind.
// A file changed in between has its upload aborted, named, and sent
// again whole.
func TestUploadInterruptKeepsAndResumes(t *testing.T) {
	const part = 64 << 10
	for _, changed := range []bool{false, true} {
		t.Run(map[bool]string{false: "unchanged", true: "changed"}[changed], func(t *testing.T) {
			srv, c := emulator(t)
			dir, journals := t.TempDir(), t.TempDir()
			data := randomBytes(20*part, 1)
			path := filepath.Join(dir, "big")
			os.WriteFile(path, data, 0o644)
			var reports []string
			opts := UploadOptions{PartSize: part, Threshold: part, JournalDir: journals, SourceIdentity: fileIdentity,
				Report: func(m string) { reports = append(reports, m) }}
			src, _ := local.NewSource(dir, local.SourceOptions{})
			ctx, cancel := context.WithCancel(context.Background())
			cs := &cancelSource{Source: src, at: 4 * part, cancel: cancel}
			eng, _ := transfer.New([]transfer.Lane{{Source: cs}}, NewUploadSink(c, testBucket, opts), transfer.Options{Workers: 1, Threads: 1, PartSize: part})
			eng.Run(ctx)
			if n := pendingUploads(t, c, testBucket); n != 1 {
				t.Fatalf("incomplete uploads after the interrupt: got %d, want 1 (kept for the rerun)", n)
			}
			if names, _ := filepath.Glob(filepath.Join(journals, "*.upload")); len(names) != 1 {
				t.Fatalf("journals: %v, want one", names)
			}
			if changed {
				data = randomBytes(20*part, 2)
				os.WriteFile(path, data, 0o644)
				os.Chtimes(path, time.Now(), time.Now().Add(time.Hour))
			}
			srv.ResetStats()
			rec := transfertest.NewRecorder()
			src, _ = local.NewSource(dir, local.SourceOptions{})
			eng, _ = transfer.New([]transfer.Lane{{Source: src}}, NewUploadSink(c, testBucket, opts),
				transfer.Options{Workers: 1, Threads: 2, PartSize: part, Threshold: part, Observer: rec})
			if sum, err := eng.Run(context.Background()); err != nil || sum.Objects != 1 {
				t.Fatalf("rerun: %d uploaded (%v), want 1", sum.Objects, err)
			}
			if b := getObject(t, c, testBucket, "big"); !bytes.Equal(b, data) {
				t.Errorf("resumed object differs")
			}
			if n := pendingUploads(t, c, testBucket); n != 0 {
				t.Errorf("incomplete uploads after the rerun: got %d, want 0", n)
			}
			if names, _ := filepath.Glob(filepath.Join(journals, "*")); len(names) != 0 {
				t.Errorf("journals left: %v", names)
			}
			res, _ := rec.Result(path)
			wantPuts, wantResumed, wantReports := int64(16), int64(4*part), 0
			if changed {
				wantPuts, wantResumed, wantReports = 20, 0, 1
			}
			if st := srv.Stats(); st.PutRequests != wantPuts || res.Resumed != wantResumed {
				t.Errorf("rerun: %d parts sent, %d bytes resumed; want %d, %d", st.PutRequests, res.Resumed, wantPuts, wantResumed)
			}
			if len(reports) != wantReports || changed && !strings.Contains(reports[0], "its source changed") {
				t.Errorf("reports %q, want %d naming a changed source", reports, wantReports)
			}
		})
	}
}

type cancelSource struct {
	transfer.Source
	at     int64
	cancel func()
}

func (c *cancelSource) Open(ctx context.Context, o *transfer.Object, off, n int64) (*transfer.Body, error) {
	if off >= c.at {
		c.cancel()
		return nil, context.Canceled
	}
	return c.Source.Open(ctx, o, off, n)
}

// TestUploadResume leaves an upload behind as a crash would, then checks
// that the next run keeps its matching parts and completes it.
func TestUploadResume(t *testing.T) {
	const part = 64 << 10
	srv, c := emulator(t)
	dir := t.TempDir()
	data := randomBytes(4*part+7, 3)
	os.WriteFile(filepath.Join(dir, "big"), data, 0o644)
	ctx := context.Background()
	crashed, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(testBucket), Key: aws.String("big"),
		ChecksumAlgorithm: "CRC64NVME"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		h := newHash(CRC64NVME)
		h.Write(data[i*part : (i+1)*part])
		_, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(testBucket), Key: aws.String("big"), UploadId: crashed.UploadId,
			PartNumber: aws.Int32(int32(i + 1)), Body: bytes.NewReader(data[i*part : (i+1)*part]), ChecksumCRC64NVME: aws.String(encodeSum(h))})
		if err != nil {
			t.Fatal(err)
		}
	}
	// S3 lists each part's checksum; a store that does not (the emulator
	// today) has every part sent again, since none can be checked.
	listed, err := c.ListParts(ctx, &s3.ListPartsInput{Bucket: aws.String(testBucket), Key: aws.String("big"), UploadId: crashed.UploadId})
	if err != nil {
		t.Fatal(err)
	}
	wantPuts := int64(3)
	if aws.ToString(listed.Parts[0].ChecksumCRC64NVME) == "" {
		wantPuts = 5
	}
	srv.ResetStats()
	got := upload(t, c, dir, UploadOptions{}, transfer.Options{Workers: 1, Threads: 2, PartSize: part, Threshold: part})
	if got.Objects != 1 {
		t.Fatalf("got %d uploaded, want 1", got.Objects)
	}
	if b := getObject(t, c, testBucket, "big"); !bytes.Equal(b, data) {
		t.Errorf("resumed object differs")
	}
	if n := pendingUploads(t, c, testBucket); n != 0 {
		t.Errorf("incomplete uploads: got %d, want 0", n)
	}
	if st := srv.Stats(); st.PutRequests != wantPuts {
		t.Errorf("part uploads on resume: got %d, want %d", st.PutRequests, wantPuts)
	}
}

// streamSource hides that bodies are seekable, as an S3 download is not.
type streamSource struct{ transfer.Source }

func (s streamSource) Open(ctx context.Context, o *transfer.Object, off, n int64) (*transfer.Body, error) {
	b, err := s.Source.Open(ctx, o, off, n)
	if err != nil {
		return nil, err
	}
	b.ReadCloser = struct{ io.ReadCloser }{b.ReadCloser}
	return b, nil
}

func TestUploadStream(t *testing.T) {
	const part = 64 << 10
	_, c := emulator(t)
	dir := t.TempDir()
	data := randomBytes(3*part+9, 5)
	os.WriteFile(filepath.Join(dir, "s"), data, 0o644)
	os.WriteFile(filepath.Join(dir, "small"), data[:100], 0o644)
	src, _ := local.NewSource(dir, local.SourceOptions{})
	sink := NewUploadSink(c, testBucket, UploadOptions{PartSize: part, Threshold: part})
	eng, _ := transfer.New([]transfer.Lane{{Source: streamSource{src}}}, sink, transfer.Options{Workers: 2, Threads: 2, PartSize: part})
	sum, err := eng.Run(context.Background())
	if err != nil || sum.Objects != 2 {
		t.Fatalf("got %d uploaded (%v), want 2", sum.Objects, err)
	}
	if b := getObject(t, c, testBucket, "s"); !bytes.Equal(b, data) {
		t.Errorf("streamed object differs")
	}
	if b := getObject(t, c, testBucket, "small"); !bytes.Equal(b, data[:100]) {
		t.Errorf("streamed small object differs")
	}
}

// TestUploadPutsNoBytesThatDifferFromTheSource streams small objects from
// a source whose whole-object responses carry a checksum: one whose bytes
// do not match it fails, and nothing is put at its key (a PutObject would
// make it visible before the engine verifies it); one that matches is
// uploaded.
func TestUploadPutsNoBytesThatDifferFromTheSource(t *testing.T) {
	_, c := emulator(t)
	src := transfertest.NewSource()
	src.Add("good", randomBytes(1000, 1))
	src.Add("bad", randomBytes(1000, 2))
	src.WholeChecksums = func(key string) map[string]string {
		if key == "bad" {
			return map[string]string{CRC64NVME: transfertest.CRC64NVME([]byte("other bytes"))}
		}
		return map[string]string{CRC64NVME: transfertest.CRC64NVME(src.Data(key))}
	}
	const part = 64 << 10
	sink := NewUploadSink(c, testBucket, UploadOptions{PartSize: part, Threshold: part})
	eng, err := transfer.New([]transfer.Lane{{Source: src}}, sink, transfer.Options{PartSize: part,
		Backoff: transfer.Backoff{Base: time.Millisecond, Cap: time.Millisecond, MaxAttempts: 2}})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := eng.Run(context.Background())
	if err != nil || sum.Objects != 1 || sum.Failed != 1 {
		t.Fatalf("summary %+v (%v), want 1 uploaded and 1 failed", sum, err)
	}
	if b := getObject(t, c, testBucket, "good"); !bytes.Equal(b, src.Data("good")) {
		t.Errorf("good: uploaded bytes differ")
	}
	if _, err := c.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(testBucket), Key: aws.String("bad")}); err == nil {
		t.Errorf("bad: bytes that differ from the source were put")
	}
}

// TestUploadWithoutRoomForItsJournal: a journal directory that cannot be
// made (a cache on a read-only disk) costs the upload its journal, not
// the object: a multipart upload and a stream both land, with a line
// that says so, and no incomplete upload is left behind to bill.
func TestUploadWithoutRoomForItsJournal(t *testing.T) {
	const part = 5 << 20
	_, c := emulator(t)
	dir := t.TempDir()
	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	data := randomBytes(2*part+1, 7)
	if err := os.WriteFile(filepath.Join(dir, "big"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	var said atomic.Int64
	opts := UploadOptions{JournalDir: filepath.Join(blocker, "uploads"), Report: func(string) { said.Add(1) }}
	sum := upload(t, c, dir, opts, transfer.Options{Workers: 1, Threads: 2, PartSize: part, Threshold: part})
	if sum.Objects != 1 || sum.Failed != 0 {
		t.Fatalf("upload: %d uploaded, %d failed, want 1, 0", sum.Objects, sum.Failed)
	}
	opts.PartSize, opts.Threshold = part, part
	if _, err := NewUploadSink(c, testBucket, opts).Stream(context.Background(), "stream", bytes.NewReader(data), part, 2, func(int64) {}); err != nil {
		t.Fatalf("stream: %v", err)
	}
	for _, k := range []string{"big", "stream"} {
		if !bytes.Equal(getObject(t, c, testBucket, k), data) {
			t.Errorf("%s: the object differs", k)
		}
	}
	if n := pendingUploads(t, c, testBucket); n != 0 {
		t.Errorf("%d incomplete uploads left, want 0", n)
	}
	if said.Load() == 0 {
		t.Errorf("no line said the journal could not be kept")
	}
}

// seekBody is an in-memory part body that can be read twice (a file's).
type seekBody struct{ *bytes.Reader }

func (seekBody) Close() error { return nil }

// TestSuspendAfterCompleteKeepsNothing: an upload whose Complete
// succeeded is no longer incomplete, so one interrupted after it (while
// what landed was checked) keeps nothing for a rerun to resume; it was
// counted kept for resume, in an upload's words "kept as incomplete
// uploads with their parts in S3", which none was.
func TestSuspendAfterCompleteKeepsNothing(t *testing.T) {
	const part = 5 << 20
	_, c := emulator(t)
	ctx := context.Background()
	data := randomBytes(2*part, 3)
	sink := NewUploadSink(c, testBucket, UploadOptions{PartSize: part, Threshold: part, JournalDir: t.TempDir()})
	f, err := sink.Create(ctx, transfer.Object{Key: "k", Name: "k", Size: int64(len(data))})
	if err != nil {
		t.Fatal(err)
	}
	for off := int64(0); off < int64(len(data)); off += part {
		body := &transfer.Body{ReadCloser: seekBody{bytes.NewReader(data[off : off+part])}, Off: off, Len: part, Size: int64(len(data))}
		if _, err := f.(transfer.PartWriter).WritePart(ctx, off, part, body, func(int64) {}); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	if kept, err := f.(transfer.Suspender).Suspend(); kept || err != nil {
		t.Errorf("Suspend after the upload completed: kept %v (%v), want nothing kept", kept, err)
	}
	if !bytes.Equal(getObject(t, c, testBucket, "k"), data) {
		t.Errorf("the completed object differs")
	}
}
