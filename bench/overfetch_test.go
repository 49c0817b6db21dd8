package bench

import (
	"context"
	"fmt"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// BenchmarkOverfetch measures what the server sends and how many GETs
// it answers for s3pd with no tuning flags, counted by the emulator,
// not by s3pd: loopback 16 x 64 MiB and 256 x 1 MiB (one process), and
// four --shard K/4 processes at once over a mix of sizes beside two CPU
// burners (the end-of-run takeovers of a machine short of CPU). It
// reports sent-x (body and listing bytes the server sent over the
// dataset), extra-GET-% (requests beyond the first of each range,
// takeovers and retries, over the GETs the server answered), and the
// takeovers and tail pieces per run.
func BenchmarkOverfetch(b *testing.B) {
	defer cleanBuiltBinary()
	endpoint := startServer(b, overfetchSpec, 0, 0)
	for _, oc := range overfetchCases {
		b.Run("case="+oc.name, func(b *testing.B) { measureOverfetch(b, endpoint, oc) })
	}
}

// overfetchSpec holds every set of BenchmarkOverfetch: the loopback
// sets and the mix of the sharded case (709 MB).
const overfetchSpec = "big:16:64MiB,small:256:1MiB,mix/a:100:1MiB,mix/b:40:4MiB,mix/c:10:16MiB,mix/d:4:64MiB"

type overfetchCase struct {
	name    string
	prefix  string
	bytes   int64
	shards  int // processes at once, each --shard K/shards (1: no flag)
	burners int // goroutines spinning beside them
}

var overfetchCases = []overfetchCase{
	{name: "16x64MiB", prefix: "big/", bytes: 16 << 26, shards: 1},
	{name: "256x1MiB", prefix: "small/", bytes: 256 << 20, shards: 1},
	{name: "mix-shard4-burn2", prefix: "mix/", bytes: (100 + 40*4 + 10*16 + 4*64) << 20, shards: 4, burners: 2},
}

// runSummary is what the benchmarks read of s3pd's --json summary.
type runSummary struct {
	Type     string  `json:"type"`
	Requests int64   `json:"requests"`
	Retries  int64   `json:"retries"`
	Hedged   int64   `json:"hedged"`
	Splits   int64   `json:"splits"`
	Ranges   int64   `json:"ranges"`
	Bytes    int64   `json:"bytes"`
	InFlight float64 `json:"in_flight_mean"`
}

func measureOverfetch(b *testing.B, endpoint string, oc overfetchCase) {
	home := b.TempDir()
	b.SetBytes(oc.bytes)
	var sent, gets, requests, ranges, hedged, splits int64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		serverStats(b, endpoint, true)
		stop := burn(oc.burners)
		b.StartTimer()
		sums, err := runShards(s3pdBinary(b), home, endpoint, oc)
		b.StopTimer()
		stop()
		if err != nil {
			b.Fatal(err)
		}
		st := serverStats(b, endpoint, false)
		sent += st.BytesSent
		gets += st.GetRequests
		var got int64
		for _, s := range sums {
			requests += s.Requests
			ranges += s.Ranges
			hedged += s.Hedged
			splits += s.Splits
			got += s.Bytes
		}
		if got != oc.bytes {
			b.Fatalf("the shards moved %d bytes, want the dataset's %d", got, oc.bytes)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(sent)/float64(oc.bytes)/float64(b.N), "sent-x")
	if ranges > 0 { // a binary that counts its ranges
		b.ReportMetric(100*float64(requests-ranges)/float64(max(gets, 1)), "extra-GET-%")
	}
	b.ReportMetric(float64(gets)/float64(b.N), "GETs/op")
	b.ReportMetric(float64(hedged)/float64(b.N), "hedged/op")
	b.ReportMetric(float64(splits)/float64(b.N), "splits/op")
}

// runShards runs oc's s3pd processes at once, each with --json into
// the discard sink, and returns their summaries.
func runShards(bin, home, endpoint string, oc overfetchCase) ([]runSummary, error) {
	sums := make([]runSummary, oc.shards)
	errs := make([]error, oc.shards)
	var wg sync.WaitGroup
	for k := range oc.shards {
		argv := []string{"get", "s3://bench/" + oc.prefix, "--benchmark", "--endpoint-url", endpoint, "--quiet", "--json"}
		if oc.shards > 1 {
			argv = append(argv, "--shard", fmt.Sprintf("%d/%d", k, oc.shards))
		}
		wg.Go(func() { sums[k], errs[k] = runSummaryOf(bin, home, argv) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return sums, nil
}

func runSummaryOf(bin, home string, argv []string) (runSummary, error) {
	cmd := exec.Command(bin, argv...)
	cmd.Env = childEnv(home)
	out, err := cmd.Output()
	if err != nil {
		return runSummary{}, fmt.Errorf("s3pd %s: %v\n%s", strings.Join(argv, " "), err, out)
	}
	s, ok := lastSummary(string(out))
	if !ok {
		return s, fmt.Errorf("s3pd %s: no summary line in\n%s", strings.Join(argv, " "), out)
	}
	return s, nil
}

// burn spins n goroutines, each on a thread of its own, until the
// returned function is called: the load of other work on the machine.
func burn(n int) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			runtime.LockOSThread()
			for ctx.Err() == nil {
			}
		})
	}
	return func() { cancel(); wg.Wait() }
}
