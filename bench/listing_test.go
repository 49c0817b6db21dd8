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

// listingRound counts BenchmarkListing's rounds, to alternate which
// contender runs first.
var listingRound int

// BenchmarkListing plans a prefix of S3PD_LIST_KEYS keys (default
// 1,000,000) of one byte each spread over 100 sub-prefixes, against the
// emulator in a child with S3's 30 ms before each response, with one
// listing stream and with fan-out over the sub-prefixes (16 streams,
// s3pd's default), side by side in each round (one round per -count,
// the order alternating). It reports each contender's keys per second
// and the round's gain, the one stream's time over the fan-out's.
// make bench-list runs it and summarises the rounds.
func BenchmarkListing(b *testing.B) {
	keys := 1_000_000
	if v := os.Getenv("S3PD_LIST_KEYS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 100 {
			b.Fatalf("S3PD_LIST_KEYS=%q: want a number of at least 100", v)
		}
		keys = n
	}
	keys = keys / 100 * 100
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
	client, err := s3store.NewClient(ctx, s3emu.DefaultBucket, s3store.ClientOptions{EndpointURL: endpoint, Transport: transportOf(32)})
	if err != nil {
		b.Fatal(err)
	}
	list := func(streams int) time.Duration {
		src := s3store.NewSource(client, s3store.Target{Bucket: s3emu.DefaultBucket, Prefix: "list/", FanOut: streams})
		n := 0
		start := time.Now()
		if err := src.List(ctx, func(transfer.Object) error { n++; return nil }); err != nil {
			b.Fatal(err)
		}
		if n != keys {
			b.Fatalf("listed %d keys, want %d", n, keys)
		}
		return time.Since(start)
	}
	b.Run(fmt.Sprintf("keys=%d", keys), func(b *testing.B) {
		for range b.N {
			var one, fan time.Duration
			if listingRound++; listingRound%2 == 1 {
				one, fan = list(1), list(16)
			} else {
				fan, one = list(16), list(1)
			}
			b.ReportMetric(float64(keys)/one.Seconds(), "keys/s-1stream")
			b.ReportMetric(float64(keys)/fan.Seconds(), "keys/s-16streams")
			b.ReportMetric(one.Seconds()/fan.Seconds(), "gain")
		}
	})
}
