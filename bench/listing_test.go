package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/s3pd/s3pd/pkg/s3emu"
	"github.com/s3pd/s3pd/pkg/s3store"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// BenchmarkListing plans a prefix of S3PD_LIST_KEYS keys (default
// 1,000,000) of one byte each (the server prepares every ETag and
// checksum before it serves) spread over 100 sub-prefixes, against the emulator in a
// child with S3's 30 ms before each response, with one listing stream
// and with fan-out over the sub-prefixes (16 streams, s3pd's default),
// side by side in each round. It reports keys per second; the ratio of
// the two is the fan-out's gain. make bench-list runs it.
func BenchmarkListing(b *testing.B) {
	keys := 1_000_000
	if v := os.Getenv("S3PD_LIST_KEYS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 100 {
			b.Fatalf("S3PD_LIST_KEYS=%q: want a number of at least 100", v)
		}
		keys = n
	}
	var groups []string
	for i := range 100 {
		groups = append(groups, fmt.Sprintf("list/p%02d:%d:1", i, keys/100))
	}
	endpoint := startServer(b, strings.Join(groups, ","), 30*time.Millisecond, 0)
	b.Setenv("AWS_ACCESS_KEY_ID", "bench")
	b.Setenv("AWS_SECRET_ACCESS_KEY", "bench")
	b.Setenv("AWS_REGION", "us-east-1")
	b.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	ctx := context.Background()
	client, err := s3store.NewClient(ctx, s3emu.DefaultBucket, s3store.ClientOptions{EndpointURL: endpoint, Conns: 32})
	if err != nil {
		b.Fatal(err)
	}
	for _, streams := range []int{1, 16} {
		b.Run(fmt.Sprintf("keys=%d/streams=%d", keys/100*100, streams), func(b *testing.B) {
			for range b.N {
				src := s3store.NewSource(client, s3emu.DefaultBucket)
				src.Prefix, src.FanOut = "list/", streams
				n := 0
				start := time.Now()
				if err := src.List(ctx, func(transfer.Object) error { n++; return nil }); err != nil {
					b.Fatal(err)
				}
				if n != keys/100*100 {
					b.Fatalf("listed %d keys, want %d", n, keys/100*100)
				}
				b.ReportMetric(float64(n)/time.Since(start).Seconds(), "keys/s")
			}
		})
	}
}
