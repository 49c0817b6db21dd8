package s3store

//lint:file-ignore SA1019 the SDK's deprecated manager is measured as a peer: users still run it

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3pd/s3pd/pkg/local"
	"github.com/s3pd/s3pd/pkg/s3emu"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// BenchmarkUpload compares the upload sink, driven by the engine, with
// the SDK's upload manager at the same concurrency and part size: one
// 1 GiB file on tmpfs (COPYBENCH_DIR, default /dev/shm) into the
// emulator's discard backend, which checks each part's checksum and keeps
// nothing.
func BenchmarkUpload(b *testing.B) {
	const (
		size    = 1 << 30
		part    = 16 << 20
		threads = 8
	)
	dir := os.Getenv("COPYBENCH_DIR")
	if dir == "" {
		dir = "/dev/shm"
	}
	dir = filepath.Join(dir, "s3pd-uploadbench")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Skipf("no tmpfs for the upload benchmark: %v", err)
	}
	p := filepath.Join(dir, "f")
	if st, err := os.Stat(p); err != nil || st.Size() != size {
		chunk := randomBytes(1<<20, 1)
		f, err := os.Create(p)
		if err != nil {
			b.Fatal(err)
		}
		for i := range size >> 20 {
			chunk[0] = byte(i)
			f.Write(chunk)
		}
		f.Close()
	}
	c := testClient(s3emu.NewTestServer(b, s3emu.Options{Backend: s3emu.BackendDiscard}).URL)

	b.Run("tool=s3pd", func(b *testing.B) {
		b.SetBytes(size)
		src, err := local.NewSource(p, local.SourceOptions{})
		if err != nil {
			b.Fatal(err)
		}
		for range b.N {
			sink := NewUploadSink(c, "bench", UploadOptions{Prefix: "s3pd/", PartSize: part, Threshold: part, Overwrite: true})
			eng, _ := transfer.New([]transfer.Lane{{Source: src}}, sink,
				transfer.Options{Workers: 1, Threads: threads, PartSize: part, Threshold: part})
			sum, err := eng.Run(context.Background())
			if err != nil || sum.Objects != 1 {
				b.Fatalf("upload: %d objects, %v", sum.Objects, err)
			}
		}
	})
	b.Run("tool=manager", func(b *testing.B) {
		b.SetBytes(size)
		up := manager.NewUploader(c, func(u *manager.Uploader) { u.Concurrency, u.PartSize = threads, part })
		for range b.N {
			f, err := os.Open(p)
			if err != nil {
				b.Fatal(err)
			}
			_, err = up.Upload(context.Background(), &s3.PutObjectInput{Bucket: aws.String("bench"), Key: aws.String("manager/f"), Body: f})
			f.Close()
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}
