package bench

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/s3pd/s3pd/pkg/s3emu"
)

// TestContenders runs every contender once on a small dataset, into a
// discard sink and into a directory, and checks that each moved every
// byte: the benchmarks compare clients that did the same work.
func TestContenders(t *testing.T) {
	if testing.Short() {
		t.Skip("builds s3pd and starts child processes")
	}
	endpoint := startServer(t, "big:2:9MiB,small:8:64KiB", 0, 0)
	sets := []dataset{
		{name: "2x9MiB", prefix: "big/", objects: 2, size: 9 << 20, workers: 2, threads: 2, tmConc: 2},
		{name: "8x64KiB", prefix: "small/", objects: 8, size: 64 << 10, workers: 4, threads: 1, tmConc: 4},
	}
	contenders := append(append([]contender{}, loopbackContenders...), loopbackOnRequest...)
	if os.Getenv("S3PD_OLD_BIN") == "" {
		contenders = slices.DeleteFunc(contenders, func(c contender) bool { return c.name == "s3pd-old" })
	}
	if s5 := os.Getenv("S5CMD"); s5 != "" {
		contenders = append(contenders, contender{"s5cmd", func(tb testing.TB, endpoint string, d dataset, dest string) ([]string, []string) {
			return []string{s5, "--endpoint-url", endpoint, "--log", "error", "cp", "s3://bench/" + d.prefix + "*", dest + "/"}, nil
		}})
	}
	home := t.TempDir()
	for _, d := range sets {
		for _, c := range contenders {
			for _, sink := range []string{"discard", "dir"} {
				if sink == "discard" && c.name == "s5cmd" {
					continue
				}
				t.Run(d.name+"/"+c.name+"/"+sink, func(t *testing.T) {
					dest := ""
					if sink == "dir" {
						dest = t.TempDir()
					}
					argv, env := c.cmd(t, endpoint, d, dest)
					u := runChild(t, home, env, argv...)
					if u.wall <= 0 || u.maxRSS <= 0 {
						t.Errorf("got wall %v, peak RSS %d: want both positive", u.wall, u.maxRSS)
					}
					if dest == "" {
						return
					}
					got, err := treeBytes(dest)
					if err != nil || got != d.bytes() {
						t.Errorf("landed %d bytes (%v), want %d", got, err, d.bytes())
					}
				})
			}
		}
	}
}

func TestReadHWM(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := dir + "/" + name
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name string
		path string
		want int64
	}{
		{"status", write("ok", "Name:\tx\nVmPeak:\t  900 kB\nVmHWM:\t    2216 kB\nVmRSS:\t 2000 kB\n"), 2216 << 10},
		{"no VmHWM", write("none", "Name:\tx\nVmRSS:\t 2000 kB\n"), 0},
		{"garbage", write("bad", "Name:\tx\nVmHWM:\tlots\n"), 0},
		{"missing file", dir + "/nope", 0},
	} {
		if got := readHWM(tc.path); got != tc.want {
			t.Errorf("%s: got %d, want %d", tc.name, got, tc.want)
		}
	}
	if got := readHWM("/proc/self/status"); got <= 0 {
		t.Errorf("/proc/self/status: got %d, want a positive peak RSS", got)
	}
}

// TestModelServer checks the plumbing of BenchmarkBudget: a child emulator
// started with a throttle and stalls applies them, and its counters can be
// read and reset between runs.
func TestModelServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child emulator")
	}
	ep := startModel(t, "m:4:64KiB", model{throttle: s3emu.Throttle{MaxInFlight: 1}, stalls: s3emu.Stalls{Fraction: 1, For: 100 * time.Millisecond}})
	var wg sync.WaitGroup
	codes := make([]int, 4)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Get(fmt.Sprintf("%s/bench/m/%08d", ep, i))
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			codes[i] = resp.StatusCode
		}()
	}
	wg.Wait()
	st := serverStats(t, ep, true)
	var served int64
	for _, c := range codes {
		if c == 200 {
			served++
		}
	}
	if st.GetRequests != 4 || st.ThrottledGets != 4-served || st.ThrottledGets == 0 || st.Stalls != served {
		t.Errorf("codes %v, stats %+v: want 4 GETs, those beyond one in flight throttled, the served ones stalled", codes, st)
	}
	if st := serverStats(t, ep, false); st.GetRequests != 0 || st.Stalls != 0 {
		t.Errorf("after a reset: %+v, want zero counters", st)
	}
}
