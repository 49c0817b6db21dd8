package bench

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/s3pd/s3pd/internal/bare"
	"github.com/s3pd/s3pd/pkg/config"
	"github.com/s3pd/s3pd/pkg/local"
	"github.com/s3pd/s3pd/pkg/s3emu"
	"github.com/s3pd/s3pd/pkg/s3store"
	"github.com/s3pd/s3pd/pkg/sink"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// BenchmarkInProcess runs s3pd's engine in this process, wired as `s3pd
// get` wires it (one lane from s3store.NewClient, the discard sink or the
// local sink on tmpfs, workers x threads from the set, s3pd's defaults
// otherwise), with and without verification, next to the bare client,
// against the emulator in a child: no process start-up, so what is left
// between them is the engine, the sink and the CRC. It is the one to
// profile: go test -bench InProcess -cpuprofile cpu.out ./bench.
func BenchmarkInProcess(b *testing.B) {
	endpoint := startServer(b, loopbackSpec, 0, 0)
	b.Setenv("AWS_ACCESS_KEY_ID", "bench")
	b.Setenv("AWS_SECRET_ACCESS_KEY", "bench")
	b.Setenv("AWS_REGION", "us-east-1")
	b.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	ctx := context.Background()
	for _, sinkName := range []string{"discard", "tmpfs"} {
		root := ""
		if sinkName == "tmpfs" {
			root = tmpfsRoot(b)
		}
		// dest returns a fresh directory ("" to discard) and what to do,
		// outside the timer, once it is filled: check that it holds want
		// bytes, and remove it.
		dest := func(b *testing.B) (string, func(want int64)) {
			if root == "" {
				return "", func(int64) {}
			}
			b.StopTimer()
			defer b.StartTimer()
			dir, err := os.MkdirTemp(root, "s3pd-inprocess-")
			if err != nil {
				b.Fatal(err)
			}
			return dir, func(want int64) {
				b.StopTimer()
				defer b.StartTimer()
				if got, err := treeBytes(dir); err != nil || got != want {
					b.Fatalf("%s holds %d bytes (%v), want %d", dir, got, err, want)
				}
				if err := os.RemoveAll(dir); err != nil {
					b.Fatal(err)
				}
			}
		}
		for _, d := range loopbackSets {
			prefix := "sink=" + sinkName + "/set=" + d.name + "/client="
			b.Run(prefix+"bare", func(b *testing.B) {
				b.SetBytes(d.bytes())
				for i := 0; i < b.N; i++ {
					dir, done := dest(b)
					c := bare.New(bare.Options{Endpoint: endpoint, Bucket: s3emu.DefaultBucket, Credentials: credentials(),
						Concurrency: d.workers * d.threads, PartSize: partSize})
					objs, err := c.List(ctx, d.prefix)
					if err != nil {
						b.Fatal(err)
					}
					var n int64
					if dir == "" {
						n, err = c.Discard(ctx, objs)
					} else {
						n, err = c.Download(ctx, dir, d.prefix, objs)
					}
					if err != nil || n != d.bytes() {
						b.Fatalf("landed %d bytes (%v), want %d", n, err, d.bytes())
					}
					done(d.bytes())
				}
			})
			for _, verify := range []transfer.Verify{transfer.VerifyAuto, transfer.VerifyOff} {
				name := "s3pd-engine"
				if verify == transfer.VerifyOff {
					name += "-verify-off"
				}
				b.Run(prefix+name, func(b *testing.B) {
					b.SetBytes(d.bytes())
					for i := 0; i < b.N; i++ {
						dir, done := dest(b)
						sum, crcs, err := runEngine(ctx, endpoint, d.prefix, dir, d.workers, d.threads, verify)
						if err != nil || sum.Bytes != d.bytes() || sum.Failed > 0 {
							b.Fatalf("moved %d bytes, %d failed (%v), want %d", sum.Bytes, sum.Failed, err, d.bytes())
						}
						if verify != transfer.VerifyOff && crcs != int64(d.objects) {
							b.Fatalf("verified the CRC64NVME of %d of %d objects", crcs, d.objects)
						}
						done(d.bytes())
					}
				})
			}
		}
	}
}

// runEngine runs s3pd's engine wired as `s3pd get` wires it: one lane
// from s3store.NewClient, the local sink on dir (the discard sink when dir
// is empty), workers x threads, s3pd's defaults otherwise. It returns the
// summary and how many objects had their CRC64NVME verified.
func runEngine(ctx context.Context, endpoint, prefix, dir string, workers, threads int, verify transfer.Verify) (transfer.Summary, int64, error) {
	client, err := s3store.NewClient(ctx, s3emu.DefaultBucket, s3store.ClientOptions{EndpointURL: endpoint, Transport: transportOf(workers * threads)})
	if err != nil {
		return transfer.Summary{}, 0, err
	}
	src := s3store.NewSource(client, s3store.Target{Bucket: s3emu.DefaultBucket, Prefix: prefix, Verify: verify != transfer.VerifyOff})
	var sk transfer.Sink = sink.Discard{}
	if dir != "" {
		ls, err := local.NewSink(dir, local.Options{ResumeMin: partSize})
		if err != nil {
			return transfer.Summary{}, 0, err
		}
		defer ls.Close()
		sk = ls
	}
	var crcs verifiedCount
	eng, err := transfer.New([]transfer.Lane{{Name: "default", Source: src}}, sk, transfer.Options{
		Workers: workers, Threads: threads, MaxRequests: workers * threads,
		PartSize: partSize, Threshold: partSize, Verify: verify, Observer: &crcs,
	})
	if err != nil {
		return transfer.Summary{}, 0, err
	}
	sum, err := eng.Run(ctx)
	return sum, crcs.n.Load(), err
}

// verifiedCount counts the objects whose CRC64NVME was verified.
type verifiedCount struct {
	transfer.NopObserver
	n atomic.Int64
}

func (v *verifiedCount) ObjectDone(r transfer.Result) {
	if r.Err == nil && slices.Contains(r.Verification.Checksums, "crc64nvme") {
		v.n.Add(1)
	}
}

// BenchmarkInProcessS3Like runs the engine as `s3pd get` with no tuning
// flags wires it (s3pd's default settings, the local sink) on the S3-like
// sets, for profiling the latency-bound case.
func BenchmarkInProcessS3Like(b *testing.B) {
	endpoint := startServer(b, s3likeSpec, 30*time.Millisecond, 12_500_000)
	root := tmpfsRoot(b)
	b.Setenv("AWS_ACCESS_KEY_ID", "bench")
	b.Setenv("AWS_SECRET_ACCESS_KEY", "bench")
	b.Setenv("AWS_REGION", "us-east-1")
	b.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	ctx := context.Background()
	s := config.Defaults()
	for _, d := range s3likeSets {
		b.Run("set="+d.name+"/client=s3pd-engine", func(b *testing.B) {
			b.SetBytes(d.bytes())
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				dest := filepath.Join(root, strconv.Itoa(i))
				b.StartTimer()
				client, err := s3store.NewClient(ctx, s3emu.DefaultBucket, s3store.ClientOptions{EndpointURL: endpoint, Transport: transportOf(s.MaxConcurrentRequests)})
				if err != nil {
					b.Fatal(err)
				}
				src := s3store.NewSource(client, s3store.Target{Bucket: s3emu.DefaultBucket, Prefix: d.prefix})
				sk, err := local.NewSink(dest, local.Options{})
				if err != nil {
					b.Fatal(err)
				}
				eng, err := transfer.New([]transfer.Lane{{Name: "default", Source: src}}, sk, transfer.Options{
					Workers: s.Workers, Threads: s.Threads, MaxRequests: s.MaxConcurrentRequests,
					PartSize: s.PartSize, Threshold: s.MultipartThreshold, QueueSize: s.MaxQueueSize,
				})
				if err != nil {
					b.Fatal(err)
				}
				sum, err := eng.Run(ctx)
				sk.Close()
				if err != nil || sum.Bytes != d.bytes() || sum.Failed > 0 {
					b.Fatalf("moved %d bytes, %d failed (%v), want %d", sum.Bytes, sum.Failed, err, d.bytes())
				}
				b.StopTimer()
				os.RemoveAll(dest)
				b.StartTimer()
			}
			b.ReportMetric(float64(d.objects)*float64(b.N)/b.Elapsed().Seconds(), "objects/s")
		})
	}
}

// BenchmarkPerRequest measures the client's cost of one request: 1,024
// objects of 1 KiB fetched one at a time, so the time and allocations
// per object are nearly all request overhead (signing, SDK middleware,
// engine bookkeeping), bare against s3pd's engine in-process.
func BenchmarkPerRequest(b *testing.B) {
	const objects = 1024
	endpoint := startServer(b, "tiny:1024:1KiB", 0, 0)
	b.Setenv("AWS_ACCESS_KEY_ID", "bench")
	b.Setenv("AWS_SECRET_ACCESS_KEY", "bench")
	b.Setenv("AWS_REGION", "us-east-1")
	b.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	ctx := context.Background()
	perObject := func(b *testing.B) {
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/objects, "µs/request")
	}
	b.Run("client=bare", func(b *testing.B) {
		c := bare.New(bare.Options{Endpoint: endpoint, Bucket: s3emu.DefaultBucket, Credentials: credentials(), Concurrency: 1})
		objs, err := c.List(ctx, "tiny/")
		if err != nil || len(objs) != objects {
			b.Fatalf("listed %d objects (%v), want %d", len(objs), err, objects)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if n, err := c.Discard(ctx, objs); err != nil || n != objects<<10 {
				b.Fatalf("discarded %d bytes (%v)", n, err)
			}
		}
		perObject(b)
	})
	b.Run("client=s3pd-engine", func(b *testing.B) {
		client, err := s3store.NewClient(ctx, s3emu.DefaultBucket, s3store.ClientOptions{EndpointURL: endpoint, Transport: transportOf(1)})
		if err != nil {
			b.Fatal(err)
		}
		src := s3store.NewSource(client, s3store.Target{Bucket: s3emu.DefaultBucket, Prefix: "tiny/"})
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			eng, err := transfer.New([]transfer.Lane{{Name: "default", Source: src}}, sink.Discard{}, transfer.Options{Workers: 1, Threads: 1})
			if err != nil {
				b.Fatal(err)
			}
			sum, err := eng.Run(ctx)
			if err != nil || sum.Objects != objects {
				b.Fatalf("moved %d objects (%v), want %d", sum.Objects, err, objects)
			}
		}
		perObject(b)
	})
}
