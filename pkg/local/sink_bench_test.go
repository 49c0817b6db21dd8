package local

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// BenchmarkLand lands 256 files of 1 MiB in 128 KiB writes, by 1 or 16
// goroutines, through the sink (skip check, temporary name, sync, mtime,
// rename) and through the least a writer must do (open, size, write,
// close), into $S3PD_BENCH_TMPFS (default /dev/shm) so that no disk
// decides: the sink's cost per file, without a network.
//
//	go test -run '^$' -bench Land -count 10 ./pkg/local | benchstat -col /writer -
func BenchmarkLand(b *testing.B) {
	const (
		files = 256
		size  = 1 << 20
		chunk = 128 << 10
	)
	root := os.Getenv("S3PD_BENCH_TMPFS")
	if root == "" {
		root = "/dev/shm"
	}
	buf := make([]byte, chunk)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	mtime := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	// fill writes one file's bytes in chunk-sized writes.
	fill := func(w io.WriterAt) error {
		for off := int64(0); off < size; off += chunk {
			if _, err := w.WriteAt(buf, off); err != nil {
				return err
			}
		}
		return nil
	}
	// Each writer returns how it lands file i in dir, and what to do
	// after the last.
	writers := []struct {
		name string
		open func(b *testing.B, dir string) (land func(i int) error, done func())
	}{
		{"sink", func(b *testing.B, dir string) (func(int) error, func()) {
			s, err := NewSink(dir, Options{ResumeMin: 8 << 20})
			if err != nil {
				b.Fatal(err)
			}
			return func(i int) error {
				name := "f" + strconv.Itoa(i)
				obj := transfer.Object{Key: name, Name: name, Size: size, ETag: `"e"`, ModTime: mtime}
				if err := s.Check(obj); err != nil {
					return err
				}
				f, err := s.Create(context.Background(), obj)
				if err != nil {
					return err
				}
				if err := fill(f); err != nil {
					f.Abort()
					return err
				}
				return f.Commit()
			}, func() { s.Close() }
		}},
		{"bare", func(b *testing.B, dir string) (func(int) error, func()) {
			return func(i int) error {
				f, err := os.OpenFile(filepath.Join(dir, "f"+strconv.Itoa(i)), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
				if err != nil {
					return err
				}
				if err := f.Truncate(size); err != nil {
					f.Close()
					return err
				}
				if err := fill(f); err != nil {
					f.Close()
					return err
				}
				return f.Close()
			}, func() {}
		}},
	}
	for _, workers := range []int{1, 16} {
		for _, w := range writers {
			b.Run(fmt.Sprintf("workers=%d/writer=%s", workers, w.name), func(b *testing.B) {
				b.SetBytes(files * size)
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					dir, err := os.MkdirTemp(root, "s3pd-land-")
					if err != nil {
						b.Skipf("no tmpfs at %s (set S3PD_BENCH_TMPFS): %v", root, err)
					}
					b.StartTimer()
					land, done := w.open(b, dir)
					var next atomic.Int64
					var wg sync.WaitGroup
					errs := make(chan error, workers)
					for range workers {
						wg.Add(1)
						go func() {
							defer wg.Done()
							for k := int(next.Add(1) - 1); k < files; k = int(next.Add(1) - 1) {
								if err := land(k); err != nil {
									errs <- err
									return
								}
							}
						}()
					}
					wg.Wait()
					done()
					b.StopTimer()
					close(errs)
					if err := <-errs; err != nil {
						b.Fatal(err)
					}
					if err := os.RemoveAll(dir); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
			})
		}
	}
}
