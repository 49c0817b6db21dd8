package shard

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/s3pd/s3pd/pkg/manifest"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// BenchmarkSplitMillionManifestEntries splits a text manifest of 10^6
// entries with sizes (1 KiB to 64 MiB) over 1,000 shards, as one shard's
// process does: read and spool it (every entry: the split drops the
// repeats), split it, emit shard 7's objects; "unique" names each key
// once, "tenth-repeated" names a tenth of them again (1.1 million lines).
// peak-live-MB is the largest live heap any garbage collection found.
//
//	go test -run '^$' -bench SplitMillionManifestEntries -benchtime 3x ./pkg/shard/
func BenchmarkSplitMillionManifestEntries(b *testing.B) {
	b.Run("unique", func(b *testing.B) { benchmarkSplit(b, 0) })
	b.Run("tenth-repeated", func(b *testing.B) { benchmarkSplit(b, 10) })
}

// benchmarkSplit runs the split of BenchmarkSplitMillionManifestEntries
// over a manifest that names again one key in every repeatEvery (0:
// none), a few lines after its first entry.
func benchmarkSplit(b *testing.B, repeatEvery int) {
	path := filepath.Join(b.TempDir(), "manifest")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	sizes := []int64{1 << 10, 64 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20}
	size := func(i int) int64 { return sizes[(i*7+i/3)%len(sizes)] }
	for i := range 1_000_000 {
		fmt.Fprintf(w, "data/part-%07d.bin\t%d\n", i, size(i))
		if repeatEvery > 0 && i%repeatEvery == repeatEvery-1 {
			fmt.Fprintf(w, "data/part-%07d.bin\t%d\n", i-repeatEvery/2, size(i-repeatEvery/2))
		}
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	open := func(context.Context, string) (io.ReadCloser, error) { return os.Open(path) }
	var peak uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
			metrics.Read(live)
			peak = max(peak, live[0].Value.Uint64())
		}
	}()
	b.ResetTimer()
	for range b.N {
		m := manifest.New(manifest.Options{Location: path, Bucket: "b", Prefix: "data/", Open: open, Unresolved: true, Repeats: true})
		l, _ := Split(m, Spec{K: 7, N: 1000}, Options{TempDir: b.TempDir()})
		var n int
		if err := l.List(context.Background(), func(transfer.Object) error { n++; return nil }); err != nil {
			b.Fatal(err)
		}
		if n == 0 || n > 2_000 {
			b.Fatalf("shard 7 of 1,000 holds %d of a million keys", n)
		}
	}
	b.StopTimer()
	close(stop)
	wg.Wait()
	b.ReportMetric(float64(peak)/(1<<20), "peak-live-MB")
}
