package s3store

import (
	"bytes"
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/s3pd/s3pd/pkg/local"
	"github.com/s3pd/s3pd/pkg/s3emu"
	"github.com/s3pd/s3pd/pkg/transfer"
	"github.com/s3pd/s3pd/pkg/transfer/transfertest"
)

// damage is what corruptingProxy does to the body of every upload.
type damage int

const (
	flipByte damage = iota // one byte changed
	addBytes               // bytes added at the end, as a framing would
)

// corruptingProxy forwards to target, changing the body of every
// PutObject and UploadPart as d says (s3emu.NewCorruptingProxy).
func corruptingProxy(t testing.TB, target string, d damage) string {
	return s3emu.NewCorruptingProxy(t, target, func(b []byte) []byte {
		switch d {
		case flipByte:
			b[len(b)/2] ^= 0x20
		case addBytes:
			b = append(b, "\r\n0\r\n\r\n"...)
		}
		return b
	})
}

// gofakes3Server starts gofakes3 with its memory backend, a store that
// checks no checksum and returns none, with the test bucket.
func gofakes3Server(t testing.TB) *s3.Client {
	t.Helper()
	backend := s3mem.New()
	if err := backend.CreateBucket(testBucket); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	t.Cleanup(srv.Close)
	return testClient(srv.URL)
}

// uploadOne uploads one file of size bytes named f through c and
// returns what the engine reported of it.
func uploadOne(t *testing.T, c *s3.Client, size int, alg string) (transfer.Result, []byte) {
	t.Helper()
	const part = 64 << 10
	dir := t.TempDir()
	data := randomBytes(size, uint64(size))
	path := filepath.Join(dir, "f")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	src, err := local.NewSource(dir, local.SourceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rec := transfertest.NewRecorder()
	sink := NewUploadSink(c, testBucket, UploadOptions{PartSize: part, Threshold: part, ChecksumAlgorithm: alg})
	eng, err := transfer.New([]transfer.Lane{{Name: "local", Source: src}}, sink,
		transfer.Options{Workers: 1, Threads: 2, PartSize: part, Threshold: part, Observer: rec})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Run(context.Background()); err != nil {
		t.Fatalf("Run: %v", err)
	}
	res, ok := rec.Result(path)
	if !ok {
		t.Fatalf("no result for %s", path)
	}
	return res, data
}

// TestUploadChecksWhatLanded: an object the server stored other than it
// was sent, one byte changed or bytes added, by PutObject or by a
// multipart upload, fails with a checksum error, and nothing stays at
// its key; the same upload straight to the server is verified by the
// checksum the server reports of what it stored.
func TestUploadChecksWhatLanded(t *testing.T) {
	const part = 64 << 10
	for _, alg := range []string{CRC64NVME, CRC32C} {
		for _, tt := range []struct {
			name string
			size int
		}{{"put", 1000}, {"multipart", 3*part + 5}} {
			t.Run(alg+"/"+tt.name, func(t *testing.T) {
				srv := s3emu.NewTestServer(t, s3emu.Options{Backend: s3emu.BackendMemory, Buckets: []string{testBucket}})
				direct := testClient(srv.URL)
				res, data := uploadOne(t, direct, tt.size, alg)
				// The emulator keeps a CRC64NVME of every object: of a
				// CRC32C multipart upload it has checked the parts only.
				checked := res.Verification.Verified() || alg == CRC32C && res.Verification.Unverified == transfer.UnverifiedPartsOnly
				if res.Err != nil || !checked {
					t.Fatalf("straight to the server: error %v, verification %+v; want verified", res.Err, res.Verification)
				}
				if got := getObject(t, direct, testBucket, "f"); !bytes.Equal(got, data) {
					t.Fatalf("straight to the server: the object differs")
				}
				// A damaged upload that fails leaves what was there: start
				// from an empty key, so that what the check sees is only
				// what the damaged upload left.
				if _, err := direct.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String(testBucket), Key: aws.String("f")}); err != nil {
					t.Fatal(err)
				}
				damages := []damage{flipByte, addBytes}
				if alg == CRC32C {
					// Nothing the emulator answers sums in CRC32C what it
					// stored: only a change of size shows.
					damages = []damage{addBytes}
				}
				for _, d := range damages {
					res, _ := uploadOne(t, testClient(corruptingProxy(t, srv.URL, d)), tt.size, alg)
					if !errors.Is(res.Err, transfer.ErrChecksum) || res.Verification.Verified() {
						t.Errorf("damage %d: error %v, verification %+v; want a checksum error", d, res.Err, res.Verification)
					}
					if _, err := direct.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(testBucket), Key: aws.String("f")}); err == nil {
						t.Errorf("damage %d: an object that landed wrong is still at its key", d)
					}
					if n := pendingUploads(t, direct, testBucket); n != 0 {
						t.Errorf("damage %d: %d incomplete uploads left", d, n)
					}
				}
			})
		}
	}
}

// TestUploadToAStoreThatChecksNothing: gofakes3 returns no checksum and
// checks none: an upload to it lands whole, with its size checked, and
// is unverified for want of a checksum, never "checked" by the server.
func TestUploadToAStoreThatChecksNothing(t *testing.T) {
	const part = 64 << 10
	for _, size := range []int{0, 1000, 3*part + 5} {
		t.Run(strconv.Itoa(size), func(t *testing.T) {
			c := gofakes3Server(t)
			res, data := uploadOne(t, c, size, CRC64NVME)
			if res.Err != nil {
				t.Fatalf("error %v", res.Err)
			}
			if v := res.Verification; v.Verified() || v.Unverified != transfer.UnverifiedNoChecksum {
				t.Errorf("verification %+v, want unverified %s", v, transfer.UnverifiedNoChecksum)
			}
			if got := getObject(t, c, testBucket, "f"); !bytes.Equal(got, data) {
				t.Errorf("the object differs")
			}
		})
	}
}

// TestStreamChecksWhatLanded: a stream the server stored other than it
// was sent fails, and nothing stays at its key.
func TestStreamChecksWhatLanded(t *testing.T) {
	const part = 5 << 20
	for _, tt := range []struct {
		name string
		size int
	}{{"put", 1000}, {"multipart", part + 7}} {
		t.Run(tt.name, func(t *testing.T) {
			srv := s3emu.NewTestServer(t, s3emu.Options{Backend: s3emu.BackendMemory, Buckets: []string{testBucket}})
			direct := testClient(srv.URL)
			data := randomBytes(tt.size, 5)
			u := NewUploadSink(testClient(corruptingProxy(t, srv.URL, flipByte)), testBucket, UploadOptions{})
			_, err := u.Stream(context.Background(), "s", bytes.NewReader(data), part, 2, func(int64) {})
			if !errors.Is(err, transfer.ErrChecksum) {
				t.Errorf("error %v, want a checksum error", err)
			}
			if _, err := direct.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(testBucket), Key: aws.String("s")}); err == nil {
				t.Errorf("a stream that landed wrong is still at its key")
			}
			g := NewUploadSink(gofakes3Server(t), testBucket, UploadOptions{})
			res, err := g.Stream(context.Background(), "s", bytes.NewReader(data), part, 2, func(int64) {})
			if err != nil || res.Landed.Verified() || res.Landed.Unverified != transfer.UnverifiedNoChecksum {
				t.Errorf("to gofakes3: error %v, landed %+v; want unverified %s", err, res.Landed, transfer.UnverifiedNoChecksum)
			}
		})
	}
}
