package bench

//lint:file-ignore SA1019 the SDK's deprecated manager is measured as a peer: users still run it

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	"github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager"
	tmtypes "github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"golang.org/x/sync/errgroup"

	"github.com/s3pd/s3pd/internal/bare"
	"github.com/s3pd/s3pd/pkg/checksum"
	"github.com/s3pd/s3pd/pkg/s3emu"
	"github.com/s3pd/s3pd/pkg/s3store"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// clientJob is what a contender child is told through its environment.
type clientJob struct {
	client   string // bare, bare-sum, engine, tm, mgr
	endpoint string
	prefix   string // e.g. "big/"
	dest     string // empty: discard the bytes
	workers  int    // objects in flight
	threads  int    // ranges in flight per object
	tmConc   int    // transfermanager's Concurrency (objects and parts each)
	partSize int64
	want     int64 // bytes the job must move
}

// env renders job for a child.
func (j clientJob) env() []string {
	return []string{
		roleEnv + "=client",
		"S3PD_BENCH_CLIENT=" + j.client,
		"S3PD_BENCH_ENDPOINT=" + j.endpoint,
		"S3PD_BENCH_PREFIX=" + j.prefix,
		"S3PD_BENCH_DEST=" + j.dest,
		"S3PD_BENCH_WORKERS=" + strconv.Itoa(j.workers),
		"S3PD_BENCH_THREADS=" + strconv.Itoa(j.threads),
		"S3PD_BENCH_TM_CONCURRENCY=" + strconv.Itoa(j.tmConc),
		"S3PD_BENCH_PARTSIZE=" + strconv.FormatInt(j.partSize, 10),
		"S3PD_BENCH_WANT=" + strconv.FormatInt(j.want, 10),
	}
}

func jobFromEnv() (clientJob, error) {
	j := clientJob{
		client:   os.Getenv("S3PD_BENCH_CLIENT"),
		endpoint: os.Getenv("S3PD_BENCH_ENDPOINT"),
		prefix:   os.Getenv("S3PD_BENCH_PREFIX"),
		dest:     os.Getenv("S3PD_BENCH_DEST"),
	}
	var err error
	num := func(name string) int64 {
		v, perr := strconv.ParseInt(os.Getenv(name), 10, 64)
		if perr != nil && err == nil {
			err = fmt.Errorf("%s: %w", name, perr)
		}
		return v
	}
	j.workers = int(num("S3PD_BENCH_WORKERS"))
	j.threads = int(num("S3PD_BENCH_THREADS"))
	j.tmConc = int(num("S3PD_BENCH_TM_CONCURRENCY"))
	j.partSize = num("S3PD_BENCH_PARTSIZE")
	j.want = num("S3PD_BENCH_WANT")
	return j, err
}

// runClient runs the contender the environment names and checks that it
// moved every byte.
func runClient(ctx context.Context) error {
	j, err := jobFromEnv()
	if err != nil {
		return err
	}
	var got int64
	switch j.client {
	case "bare":
		got, err = runBare(ctx, j, nil)
	case "bare-sum":
		got, err = runBare(ctx, j, func(int, int64, checksum.Running) {})
	case "engine":
		var sum transfer.Summary
		sum, _, err = runEngine(ctx, j.endpoint, j.prefix, j.dest, j.workers, j.threads, transfer.VerifyAuto)
		if err == nil && sum.Failed > 0 {
			err = fmt.Errorf("%d objects failed", sum.Failed)
		}
		got = sum.Bytes
	case "tm":
		got, err = runTransferManager(ctx, j)
	case "mgr":
		got, err = runManager(ctx, j)
	default:
		err = fmt.Errorf("unknown client %q", j.client)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", j.client, err)
	}
	if got != j.want {
		return fmt.Errorf("%s: moved %d bytes, want %d", j.client, got, j.want)
	}
	return nil
}

// credentials are the dummy keys every contender signs with.
func credentials() aws.Credentials {
	return aws.Credentials{AccessKeyID: os.Getenv("AWS_ACCESS_KEY_ID"), SecretAccessKey: os.Getenv("AWS_SECRET_ACCESS_KEY")}
}

func runBare(ctx context.Context, j clientJob, sum func(int, int64, checksum.Running)) (int64, error) {
	c := bare.New(bare.Options{
		Endpoint:    j.endpoint,
		Bucket:      s3emu.DefaultBucket,
		Credentials: credentials(),
		Concurrency: j.workers * j.threads,
		PartSize:    j.partSize,
		Sum:         sum,
	})
	objs, err := c.List(ctx, j.prefix)
	if err != nil {
		return 0, err
	}
	if j.dest == "" {
		return c.Discard(ctx, objs)
	}
	return c.Download(ctx, j.dest, j.prefix, objs)
}

// sdkClient is an SDK client with s3pd's transport tuning, so the
// managers are not slowed by a pool that churns connections.
func sdkClient(ctx context.Context, j clientJob, conns int) (*s3.Client, error) {
	return s3store.NewClient(ctx, s3emu.DefaultBucket, s3store.ClientOptions{EndpointURL: j.endpoint, Transport: transportOf(conns)})
}

// listKeys lists the keys and sizes under the job's prefix.
func listKeys(ctx context.Context, c *s3.Client, prefix string) ([]string, error) {
	var keys []string
	pages := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String(s3emu.DefaultBucket), Prefix: aws.String(prefix)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	return keys, nil
}

// discardAt counts and drops what is written to it.
type discardAt struct{ n *atomic.Int64 }

func (d discardAt) WriteAt(p []byte, _ int64) (int, error) {
	d.n.Add(int64(len(p)))
	return len(p), nil
}

// eachKey calls fn for every key with n goroutines.
func eachKey(ctx context.Context, keys []string, n int, fn func(ctx context.Context, key string) error) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(n)
	for _, k := range keys {
		g.Go(func() error { return fn(gctx, k) })
	}
	return g.Wait()
}

// runTransferManager runs feature/s3/transfermanager with ranged GETs:
// DownloadDirectory into dest, or DownloadObject into a counter for each
// key with as many objects in flight as DownloadDirectory would have.
func runTransferManager(ctx context.Context, j clientJob) (int64, error) {
	c, err := sdkClient(ctx, j, j.tmConc*j.tmConc)
	if err != nil {
		return 0, err
	}
	tm := transfermanager.New(c, func(o *transfermanager.Options) {
		o.Concurrency = j.tmConc
		o.GetObjectType = tmtypes.GetObjectRanges
		o.PartSizeBytes = j.partSize
	})
	if j.dest != "" {
		out, err := tm.DownloadDirectory(ctx, &transfermanager.DownloadDirectoryInput{
			Bucket: aws.String(s3emu.DefaultBucket), Destination: aws.String(j.dest), KeyPrefix: aws.String(j.prefix),
		})
		if err != nil {
			return 0, err
		}
		if out.ObjectsFailed > 0 {
			return 0, fmt.Errorf("%d objects failed", out.ObjectsFailed)
		}
		return treeBytes(j.dest)
	}
	keys, err := listKeys(ctx, c, j.prefix)
	if err != nil {
		return 0, err
	}
	var n atomic.Int64
	err = eachKey(ctx, keys, j.tmConc, func(ctx context.Context, key string) error {
		_, err := tm.DownloadObject(ctx, &transfermanager.DownloadObjectInput{
			Bucket: aws.String(s3emu.DefaultBucket), Key: aws.String(key), WriterAt: discardAt{&n},
		})
		return err
	})
	return n.Load(), err
}

// runManager runs feature/s3/manager's Downloader, workers objects at a
// time with threads parts each.
func runManager(ctx context.Context, j clientJob) (int64, error) {
	c, err := sdkClient(ctx, j, j.workers*j.threads)
	if err != nil {
		return 0, err
	}
	d := manager.NewDownloader(c, func(d *manager.Downloader) {
		d.Concurrency = j.threads
		d.PartSize = j.partSize
	})
	keys, err := listKeys(ctx, c, j.prefix)
	if err != nil {
		return 0, err
	}
	var n atomic.Int64
	err = eachKey(ctx, keys, j.workers, func(ctx context.Context, key string) error {
		in := &s3.GetObjectInput{Bucket: aws.String(s3emu.DefaultBucket), Key: aws.String(key)}
		if j.dest == "" {
			_, err := d.Download(ctx, discardAt{&n}, in)
			return err
		}
		path := filepath.Join(j.dest, strings.TrimPrefix(key, j.prefix))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		got, err := d.Download(ctx, f, in)
		n.Add(got)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	})
	return n.Load(), err
}

// treeBytes sums the sizes of the regular files under dir.
func treeBytes(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			n += info.Size()
		}
		return err
	})
	return n, err
}
