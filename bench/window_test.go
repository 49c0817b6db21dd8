package bench

import (
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// windowContenders are s3pd with no flags (its window climbs, and stops
// at its knee) and with its window fixed (--adaptive off) at each of
// fixed requests in flight: the references the knee is measured against.
// extra goes to every command line (--ca-bundle over HTTPS).
func windowContenders(fixed []int, extra ...string) []contender {
	cs := []contender{{"s3pd", s3pdGet(append([]string{"--json"}, extra...)...)}}
	for _, n := range fixed {
		cs = append(cs, contender{"fixed" + strconv.Itoa(n),
			s3pdGet(append([]string{"--json", "--adaptive", "off", "--max-concurrent-requests", strconv.Itoa(n)}, extra...)...)})
	}
	return cs
}

// windowOld is s3pd with no flags run with the binary $S3PD_OLD_BIN
// (run.sh: OLD=REV), only when $S3PD_BENCH_CLIENTS names s3pd-old: a
// change's effect on the window, paired by round with the build before.
func windowOld(extra ...string) []contender {
	return []contender{{"s3pd-old", withOldBinary(s3pdGet(append([]string{"--json"}, extra...)...))}}
}

// BenchmarkWindow compares s3pd with no flags against its fixed windows
// of 16, 32, 64 and 256 requests in flight, on loopback into tmpfs, over
// HTTP and over HTTPS (the emulator's self-signed certificate), reporting
// each run's mean in flight (in-flight) beside throughput and CPU per
// GiB: the window should stop near the smallest fixed one that reaches
// the best's throughput.
func BenchmarkWindow(b *testing.B) {
	defer cleanBuiltBinary()
	root := tmpfsRoot(b)
	for _, proto := range []string{"http", "https"} {
		b.Run("proto="+proto, func(b *testing.B) {
			var env, extra []string
			if proto == "https" {
				ca := filepath.Join(b.TempDir(), "ca.pem")
				env, extra = []string{"S3PD_BENCH_TLS_CA=" + ca}, []string{"--ca-bundle", ca}
			}
			endpoint := startServerEnv(b, loopbackSpec, 0, 0, env...)
			for _, d := range loopbackSets {
				for _, c := range rotate(windowContenders([]int{16, 32, 64, 256}, extra...), windowOld(extra...), round()) {
					b.Run("set="+d.name+"/client="+c.name, func(b *testing.B) { measure(b, endpoint, d, root, c) })
				}
			}
		})
	}
}

// BenchmarkWindowS3Like is BenchmarkWindow under the S3-like model (30
// ms before each response, 12.5 MB/s per connection), against fixed
// windows of 64, 128 and 256: there more requests do buy throughput, and
// the climb must keep it.
func BenchmarkWindowS3Like(b *testing.B) {
	endpoint := startServer(b, s3likeSpec, 30*time.Millisecond, 12_500_000)
	defer cleanBuiltBinary()
	root := tmpfsRoot(b)
	for _, d := range s3likeSets {
		for _, c := range rotate(windowContenders([]int{64, 128, 256}), windowOld(), round()) {
			b.Run("set="+d.name+"/client="+c.name, func(b *testing.B) { measure(b, endpoint, d, root, c) })
		}
	}
}

// oneKeyRates are BenchmarkWindowOneKey's per-connection rates, each with
// the size of its one object: more 8 MiB parts than fixed 16 and than
// the start window (32) hold, so that a window that stops short shows,
// and a few seconds at most per run of any contender.
var oneKeyRates = []struct {
	name string
	rate int64 // bytes per second per connection
	size int64
}{
	{"2MBps", 2_000_000, 384 << 20},     // 48 parts, 4.2 s each
	{"12.5MBps", 12_500_000, 512 << 20}, // 64 parts, 0.67 s each
	{"100MBps", 100_000_000, 512 << 20}, // 64 parts, 84 ms each: the CPU's
}

// BenchmarkWindowOneKey compares s3pd with no flags against fixed windows
// of 16, 64 and 256 on one large object named by its key (not its
// prefix: a single object's parts are all the window has to fill),
// discarded (get --benchmark), under the S3-like model's 30 ms before
// each response at per-connection rates from 2 to 100 MB/s: the window
// must climb past its start where parts pace slowly and stop near the
// CPU's knee where they do not.
func BenchmarkWindowOneKey(b *testing.B) {
	defer cleanBuiltBinary()
	for _, r := range oneKeyRates {
		b.Run("rate="+r.name, func(b *testing.B) {
			endpoint := startServer(b, "one:1:"+strconv.FormatInt(r.size, 10), 30*time.Millisecond, r.rate)
			d := dataset{name: strconv.FormatInt(r.size>>20, 10) + "MiB", prefix: "one/00000000", objects: 1, size: r.size}
			for _, c := range rotate(windowContenders([]int{16, 64, 256}), windowOld(), round()) {
				b.Run("set="+d.name+"/client="+c.name, func(b *testing.B) { measure(b, endpoint, d, "", c) })
			}
		})
	}
}

// farKneeSet is 2,048 x 1 MiB at 1 MB/s per connection (30 ms before
// each response): 512 requests in flight move 512 MB/s, well under what
// this machine's CPU serves, so the knee lies beyond 300 in flight.
var farKneeSet = dataset{name: "2048x1MiB", prefix: "far/", objects: 2048, size: 1 << 20}

// BenchmarkWindowFarKnee compares s3pd with no flags against fixed
// windows of 128, 256 and 512 on a set whose knee is far above the CPU's:
// every request paces at 1 MB/s, so throughput grows with the requests
// in flight up to 512 and more; discarded (get --benchmark), so only the
// window is measured. s3pd-budget512 is the window with a budget of 512
// (--max-concurrent-requests 512, still adaptive): whether the climb,
// not only the default budget of 256, reaches the knee. The emulator
// holds the 512 connections (one goroutine and socket each on loopback).
func BenchmarkWindowFarKnee(b *testing.B) {
	endpoint := startServer(b, "far:2048:1MiB", 30*time.Millisecond, 1_000_000)
	defer cleanBuiltBinary()
	d := farKneeSet
	cs := append(windowContenders([]int{128, 256, 512}),
		contender{"s3pd-budget512", s3pdGet("--json", "--max-concurrent-requests", "512")})
	for _, c := range rotate(cs, windowOld(), round()) {
		b.Run("set="+d.name+"/client="+c.name, func(b *testing.B) { measure(b, endpoint, d, "", c) })
	}
}
