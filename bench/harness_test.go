package bench

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/s3pd/s3pd/pkg/s3store"
)

// startServer runs the emulator in a child process (so its CPU and
// garbage are not the contender's) until tb ends, and returns its endpoint.
func startServer(tb testing.TB, dataset string, ttfb time.Duration, rate int64) string {
	tb.Helper()
	return startServerEnv(tb, dataset, ttfb, rate)
}

// startServerEnv is startServer with more of serve's settings (extra
// environment, e.g. S3PD_BENCH_THROTTLE).
func startServerEnv(tb testing.TB, dataset string, ttfb time.Duration, rate int64, extra ...string) string {
	tb.Helper()
	self, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), roleEnv+"=serve", "S3PD_BENCH_DATASET="+dataset,
		"S3PD_BENCH_TTFB="+ttfb.String(), "S3PD_BENCH_RATE="+strconv.FormatInt(rate, 10))
	cmd.Env = append(cmd.Env, extra...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	endpoint, ok := strings.CutPrefix(strings.TrimSpace(line), "endpoint ")
	if err != nil || !ok {
		tb.Fatalf("emulator did not start: %q, %v", line, err)
	}
	go io.Copy(io.Discard, stdout)
	return endpoint
}

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// s3pdBinary returns $S3PD_BIN, or builds s3pd once into a directory that
// lives as long as the test binary's temporary files.
func s3pdBinary(tb testing.TB) string {
	tb.Helper()
	if bin := os.Getenv("S3PD_BIN"); bin != "" {
		return bin
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "s3pd-bench-bin-")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "s3pd")
		out, err := exec.Command("go", "build", "-o", builtBin, "github.com/s3pd/s3pd").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build s3pd: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		tb.Fatal(buildErr)
	}
	return builtBin
}

// cleanBuiltBinary removes a binary s3pdBinary built.
func cleanBuiltBinary() {
	if builtBin != "" {
		os.RemoveAll(filepath.Dir(builtBin))
	}
}

// childEnv is the environment of every contender: dummy credentials,
// no shared AWS or s3pd config, no instance metadata lookups.
func childEnv(home string) []string {
	var env []string
	for _, kv := range os.Environ() {
		// AWS_CA_BUNDLE goes too: the emulator speaks plain HTTP, and
		// the SDK's config loader parses the whole bundle at start
		// (about 5 ms here), which the bare client, building its S3
		// client without the loader, never does.
		if strings.HasPrefix(kv, "AWS_") || strings.HasPrefix(kv, "S3PD_") || strings.HasPrefix(kv, "HOME=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "HOME="+home, "AWS_ACCESS_KEY_ID=bench", "AWS_SECRET_ACCESS_KEY=bench",
		"AWS_REGION=us-east-1", "AWS_EC2_METADATA_DISABLED=true")
}

// usage is what one child run cost.
type usage struct {
	wall, cpu time.Duration
	maxRSS    int64  // bytes
	out       string // what it printed, stdout and stderr
}

// runChild runs argv (argv[0] "" means this test binary) with extra
// environment and returns its cost; a failure ends the benchmark with the
// child's output.
func runChild(tb testing.TB, home string, extra []string, argv ...string) usage {
	tb.Helper()
	if argv[0] == "" {
		self, err := os.Executable()
		if err != nil {
			tb.Fatal(err)
		}
		argv[0] = self
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(childEnv(home), extra...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	done := make(chan struct{})
	hwm := watchHWM(cmd.Process.Pid, done)
	err := cmd.Wait()
	wall := time.Since(start)
	close(done)
	peak := <-hwm
	if err != nil {
		tb.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out.String())
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if peak == 0 {
		// Too short to sample: rusage's figure, an upper bound (see watchHWM).
		peak = ru.Maxrss << 10
	}
	return usage{
		wall:   wall,
		cpu:    time.Duration(ru.Utime.Nano() + ru.Stime.Nano()),
		maxRSS: peak,
		out:    out.String(),
	}
}

// watchHWM reads the peak RSS (VmHWM) of process pid every few
// milliseconds until done closes, and sends the last value read, in
// bytes (0 if none was). rusage's Maxrss cannot be used: Go starts
// children with vfork, and the kernel folds the parent's RSS, shared
// until exec, into the child's Maxrss.
func watchHWM(pid int, done <-chan struct{}) <-chan int64 {
	out := make(chan int64, 1)
	path := "/proc/" + strconv.Itoa(pid) + "/status"
	go func() {
		var last int64
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			if v := readHWM(path); v > last {
				last = v
			}
			select {
			case <-done:
				out <- last
				return
			case <-t.C:
			}
		}
	}()
	return out
}

// readHWM returns the VmHWM line of a /proc status file in bytes, or 0.
func readHWM(path string) int64 {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	_, rest, ok := strings.Cut(string(data), "\nVmHWM:")
	if !ok {
		return 0
	}
	line, _, _ := strings.Cut(rest, "\n")
	kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(line), "kB")), 10, 64)
	if err != nil {
		return 0
	}
	return kb << 10
}

// tmpfsRoot is where downloads land: a tmpfs, so the disk is not measured.
func tmpfsRoot(tb testing.TB) string {
	tb.Helper()
	root := os.Getenv("S3PD_BENCH_TMPFS")
	if root == "" {
		root = "/dev/shm"
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(root, &st); err != nil {
		tb.Skipf("no tmpfs at %s (set S3PD_BENCH_TMPFS): %v", root, err)
	}
	const tmpfsMagic = 0x01021994
	if st.Type != tmpfsMagic {
		tb.Skipf("%s is not a tmpfs (set S3PD_BENCH_TMPFS)", root)
	}
	dir, err := os.MkdirTemp(root, "s3pd-bench-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// transportOf is a transport of its own for a client of conns connections
// (a run's one transport, as s3pd builds it, without settings).
func transportOf(conns int) *s3store.Transport {
	t, err := s3store.NewTransport(s3store.TransportOptions{Conns: conns})
	if err != nil {
		panic(err) // no CA bundle: no error
	}
	return t
}
