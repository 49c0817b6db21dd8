package bench

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/s3pd/s3pd/internal/testenv"
)

// dataset is one family of synthetic objects and the concurrency that
// puts 16 ranges in flight over it.
type dataset struct {
	name    string // sub-benchmark label
	prefix  string // the emulator group, with its slash
	objects int
	size    int64
	// workers x threads = 16 ranges in flight for s3pd, bare and manager;
	// transfermanager's one Concurrency sets objects and parts alike, so
	// tmConc^2 (ranged objects) or tmConc (single-GET objects) = 16.
	workers, threads, tmConc int
}

func (d dataset) bytes() int64 { return int64(d.objects) * d.size }

const partSize = 8 << 20 // s3pd's default part size, given to every contender

// The loopback sets: the 16 x 64 MiB and 256 x 1 MiB.
var (
	loopbackSpec = "big:16:64MiB,small:256:1MiB"
	loopbackSets = []dataset{
		{name: "16x64MiB", prefix: "big/", objects: 16, size: 64 << 20, workers: 2, threads: 8, tmConc: 4},
		{name: "256x1MiB", prefix: "small/", objects: 256, size: 1 << 20, workers: 16, threads: 1, tmConc: 16},
	}
)

// contender builds the command of one client: argv (argv[0] "" for this
// test binary) and extra environment. dest is empty to discard.
type contender struct {
	name string
	cmd  func(tb testing.TB, endpoint string, d dataset, dest string) (argv, env []string)
}

// s3pdGet runs the built binary as a user would, with only the
// concurrency flags and extra flags set.
func s3pdGet(extra ...string) func(testing.TB, string, dataset, string) ([]string, []string) {
	return func(tb testing.TB, endpoint string, d dataset, dest string) ([]string, []string) {
		argv := []string{s3pdBinary(tb), "get", "s3://bench/" + d.prefix}
		if dest == "" {
			argv = append(argv, "--benchmark")
		} else {
			argv = append(argv, dest+"/")
		}
		argv = append(argv, "--endpoint-url", endpoint, "--quiet")
		return append(argv, extra...), nil
	}
}

// tuned is s3pd with 16 ranges in flight for d.
func tuned(tb testing.TB, endpoint string, d dataset, dest string) ([]string, []string) {
	return s3pdGet("--workers", strconv.Itoa(d.workers), "--threads", strconv.Itoa(d.threads))(tb, endpoint, d, dest)
}

// selfClient runs one of the in-repository contenders in a child.
func selfClient(name string) func(testing.TB, string, dataset, string) ([]string, []string) {
	return func(tb testing.TB, endpoint string, d dataset, dest string) ([]string, []string) {
		job := clientJob{client: name, endpoint: endpoint, prefix: d.prefix, dest: dest,
			workers: d.workers, threads: d.threads, tmConc: d.tmConc, partSize: partSize, want: d.bytes()}
		return []string{""}, job.env()
	}
}

// tunedOld is tuned with the binary $S3PD_OLD_BIN (an older build, e.g.
// run.sh's OLD=REV): the same command line, so a change's speed shows as
// s3pd over s3pd-old.
var tunedOld = withOldBinary(tuned)

// withOldBinary is the s3pd command c builds, run with the binary
// $S3PD_OLD_BIN instead.
func withOldBinary(c func(testing.TB, string, dataset, string) ([]string, []string)) func(testing.TB, string, dataset, string) ([]string, []string) {
	return func(tb testing.TB, endpoint string, d dataset, dest string) ([]string, []string) {
		old := os.Getenv("S3PD_OLD_BIN")
		if old == "" {
			tb.Fatal("an old build's contender needs $S3PD_OLD_BIN (run.sh: OLD=REV)")
		}
		argv, env := c(tb, endpoint, d, dest)
		argv[0] = old
		return argv, env
	}
}

// tunedNoVerify is tuned with --verify off: the bare clients verify
// nothing, so this separates the engine's own cost from the CRC's.
func tunedNoVerify(tb testing.TB, endpoint string, d dataset, dest string) ([]string, []string) {
	return s3pdGet("--workers", strconv.Itoa(d.workers), "--threads", strconv.Itoa(d.threads), "--verify", "off")(tb, endpoint, d, dest)
}

var loopbackContenders = []contender{
	{"bare", selfClient("bare")},
	{"s3pd", tuned},
	{"s3pd-verify-off", tunedNoVerify},
	{"transfermanager", selfClient("tm")},
	{"manager", selfClient("mgr")},
}

// loopbackOnRequest run only when $S3PD_BENCH_CLIENTS names them.
// bare-again is bare under another name: the gap between the two is the
// harness's own noise, against which s3pd's gap can be read. bare-sum is
// bare that also sums every byte with CRC64NVME as s3pd does (and
// compares nothing): the ceiling of a client that verifies. s3pd-engine
// is s3pd's engine wired as BenchmarkInProcess wires it, in a child of its
// own: s3pd without its command line (cobra, viper, zap, the reporter)
// and without the binary's size. s3pd-old is s3pd built from an older
// commit ($S3PD_OLD_BIN).
var loopbackOnRequest = []contender{
	{"bare-again", selfClient("bare")},
	{"bare-sum", selfClient("bare-sum")},
	{"s3pd-engine", selfClient("engine")},
	{"s3pd-old", tunedOld},
}

// round is the number bench/run.sh gives each round ($S3PD_BENCH_ROUND,
// 0 if unset).
func round() int {
	n, _ := strconv.Atoi(os.Getenv("S3PD_BENCH_ROUND"))
	return max(n, 0)
}

// rotate returns the contenders to run in round k: those of cs that
// $S3PD_BENCH_CLIENTS names (comma-separated; unset: all of cs), then
// those of onRequest it names, in the order of row k of a Williams
// design (williams). Over the design's rounds each contender runs first
// equally often and right after each other one equally often: a tmpfs
// run pays for the pages its predecessor freed, a connection run for its
// predecessor's sockets, and a plain rotation would keep every
// contender's predecessor the same. The selection comes first so that
// the design covers exactly the contenders that run; a -bench pattern
// that drops some afterwards would break it.
func rotate(cs, onRequest []contender, k int) []contender {
	names := strings.Split(os.Getenv("S3PD_BENCH_CLIENTS"), ",")
	var picked []contender
	for _, c := range cs {
		if names[0] == "" || slices.Contains(names, c.name) {
			picked = append(picked, c)
		}
	}
	for _, c := range onRequest {
		if slices.Contains(names, c.name) {
			picked = append(picked, c)
		}
	}
	out := make([]contender, len(picked))
	for i, j := range williams(len(picked), k) {
		out[i] = picked[j]
	}
	return out
}

// williams returns row k (mod the number of rows) of a Williams design
// for n treatments: n rows for even n, 2n for odd n (each row and its
// reverse). The first row is 0, 1, n-1, 2, n-2, ...; row r adds r to
// every entry, mod n.
func williams(n, k int) []int {
	rows := n
	if n%2 == 1 {
		rows = 2 * n
	}
	if n == 0 {
		return nil
	}
	r := k % rows
	seq := make([]int, n)
	for j := range seq {
		first := (j + 1) / 2 // odd places: 1, 2, 3, ...
		if j%2 == 0 {
			first = (n - j/2) % n // even places: 0, n-1, n-2, ...
		}
		seq[j] = (first + r) % n
	}
	if r >= n {
		slices.Reverse(seq)
	}
	return seq
}

// measure runs c over d b.N times, each into a fresh directory under
// root (root empty: discard), and reports MB/s, CPU seconds per GiB and
// the peak RSS of the child.
func measure(b *testing.B, endpoint string, d dataset, root string, c contender) {
	home := b.TempDir()
	b.SetBytes(d.bytes())
	var cpu time.Duration
	var rss int64
	var inFlight float64 // the summaries' mean in flight, from --json
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dest := ""
		if root != "" {
			dest = filepath.Join(root, strconv.Itoa(i))
			if err := os.Mkdir(dest, 0o755); err != nil {
				b.Fatal(err)
			}
		}
		argv, env := c.cmd(b, endpoint, d, dest)
		if dest != "" {
			testenv.WarmPages(b, d.bytes()+64<<20) // tmpfs pages the host did not take back
		}
		b.StartTimer()
		u := runChild(b, home, env, argv...)
		b.StopTimer()
		cpu += u.cpu
		rss = max(rss, u.maxRSS)
		sum, summed := lastSummary(u.out)
		inFlight += sum.InFlight
		if dest == "" && summed && sum.Bytes != d.bytes() {
			// Discarded: the summary is all that says what moved.
			b.Fatalf("%s moved %d bytes, want %d", c.name, sum.Bytes, d.bytes())
		}
		if dest != "" {
			got, err := treeBytes(dest)
			if err != nil || got != d.bytes() {
				b.Fatalf("%s landed %d bytes in %s (%v), want %d", c.name, got, dest, err, d.bytes())
			}
			if err := os.RemoveAll(dest); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
	}
	b.ReportMetric(cpu.Seconds()/float64(b.N)/(float64(d.bytes())/(1<<30)), "cpu-s/GiB")
	b.ReportMetric(float64(rss)/(1<<20), "peak-RSS-MiB")
	b.ReportMetric(float64(d.objects)*float64(b.N)/b.Elapsed().Seconds(), "objects/s")
	if inFlight > 0 {
		b.ReportMetric(inFlight/float64(b.N), "in-flight")
	}
}

// BenchmarkLoopback compares s3pd with the bare clients and the SDK's
// managers on loopback, 16 ranges in flight, into a discard sink and into
// tmpfs.
func BenchmarkLoopback(b *testing.B) {
	endpoint := startServer(b, loopbackSpec, 0, 0)
	for _, sink := range []string{"discard", "tmpfs"} {
		b.Run("sink="+sink, func(b *testing.B) {
			root := ""
			if sink == "tmpfs" {
				root = tmpfsRoot(b)
			}
			for _, d := range loopbackSets {
				b.Run("set="+d.name, func(b *testing.B) {
					for _, c := range rotate(loopbackContenders, loopbackOnRequest, round()) {
						b.Run("client="+c.name, func(b *testing.B) { measure(b, endpoint, d, root, c) })
					}
				})
			}
		})
	}
}

// BenchmarkRSS measures s3pd's peak RSS with 16 workers x 4 threads and
// 16 MiB parts (64 ranges in flight); the target is under 128 MiB.
func BenchmarkRSS(b *testing.B) {
	endpoint := startServer(b, loopbackSpec, 0, 0)
	c := contender{"s3pd", s3pdGet("--workers", "16", "--threads", "4", "--partsize", "16MiB")}
	for _, sink := range []string{"discard", "tmpfs"} {
		b.Run("sink="+sink, func(b *testing.B) {
			root := ""
			if sink == "tmpfs" {
				root = tmpfsRoot(b)
			}
			for _, d := range loopbackSets {
				b.Run("set="+d.name+"/client="+c.name, func(b *testing.B) { measure(b, endpoint, d, root, c) })
			}
		})
	}
}

// The S3-like sets: latency-bound (many small objects) and
// pace-bound (4 MiB objects at 12.5 MB/s per connection). The bare
// client runs them with 256 requests in flight, as many as s3pd's and
// s5cmd's defaults (one GET per object for both).
var (
	s3likeSpec = "m4:256:4MiB,k64:5000:64KiB"
	s3likeSets = []dataset{
		{name: "256x4MiB", prefix: "m4/", objects: 256, size: 4 << 20, workers: 256, threads: 1},
		{name: "5000x64KiB", prefix: "k64/", objects: 5000, size: 64 << 10, workers: 256, threads: 1},
	}
)

// BenchmarkS3Like compares s3pd with no tuning flags against s5cmd with
// its defaults (256 workers) under S3's latency: 30 ms before each
// response and 12.5 MB/s per connection, into tmpfs; the bare client
// with 256 requests in flight shows the ceiling. It needs $S5CMD
// (bench/s5cmd.sh builds it).
func BenchmarkS3Like(b *testing.B) {
	endpoint := startServer(b, s3likeSpec, 30*time.Millisecond, 12_500_000)
	root := tmpfsRoot(b)
	contenders := []contender{{"bare", selfClient("bare")}, {"s3pd", s3pdGet()}}
	if s5 := os.Getenv("S5CMD"); s5 != "" {
		contenders = append(contenders, contender{"s5cmd", func(tb testing.TB, endpoint string, d dataset, dest string) ([]string, []string) {
			return []string{s5, "--endpoint-url", endpoint, "--log", "error", "cp", "s3://bench/" + d.prefix + "*", dest + "/"}, nil
		}})
	} else {
		b.Log("S5CMD not set: s5cmd not measured (bench/s5cmd.sh builds it)")
	}
	for _, d := range s3likeSets {
		for _, c := range rotate(contenders, nil, round()) {
			b.Run("set="+d.name+"/client="+c.name, func(b *testing.B) { measure(b, endpoint, d, root, c) })
		}
	}
}
