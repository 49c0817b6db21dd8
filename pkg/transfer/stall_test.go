package transfer

import (
	"bytes"
	"context"
	"io"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

// watchAt returns a watch at the end of a run or not, whose time to
// first byte is 1 ms (so the outlier window is minStraggle).
func watchAt(end bool) *stallWatch {
	w := new(stallWatch)
	w.init(30*time.Second, func() (bool, bool) { return true, end }, func(float64) time.Duration { return time.Millisecond })
	return w
}

// ranges has n ranges tracked by w; their contexts say whether each
// was taken over.
func ranges(w *stallWatch, n int) ([]context.Context, []*rangeClock) {
	ctxs, cs := make([]context.Context, n), make([]*rangeClock, n)
	for i := range n {
		ctxs[i], cs[i] = w.track(context.Background(), true)
	}
	return ctxs, cs
}

// feed runs the watch for d, a tick at a time, each range i receiving
// rate[i] bytes per tick (0: silent), starting at the watch time from.
func feed(w *stallWatch, cs []*rangeClock, rate []int64, from, d time.Duration) time.Duration {
	for now := from + w.every; now <= from+d; now += w.every {
		for i, c := range cs {
			c.touch(rate[i])
		}
		w.tick(int64(now))
	}
	return from + d
}

func takenOver(ctxs []context.Context) (n []int) {
	for i, ctx := range ctxs {
		if context.Cause(ctx) == errTakenOver {
			n = append(n, i)
		}
	}
	return n
}

// TestEndOfRunTakesOverOutliersOnly: at the end of a run, a range is
// taken over only when it received less than a quarter of what the
// median range in flight did over the window: not when every range is
// slow alike (a machine short of CPU), nor when one is slower by less
// than that, nor before the window has passed.
func TestEndOfRunTakesOverOutliersOnly(t *testing.T) {
	for _, tc := range []struct {
		name string
		rate []int64
		d    time.Duration
		want []int
	}{
		{"uniformly slow", []int64{1, 1, 1, 1}, time.Second, nil},
		{"one a third of the median", []int64{30, 30, 30, 10}, time.Second, nil},
		{"one a tenth of the median", []int64{100, 100, 100, 10}, time.Second, []int{3}},
		{"one silent", []int64{100, 100, 100, 0}, time.Second, []int{3}},
		{"one silent, under the window", []int64{100, 100, 100, 0}, minStraggle - watchTick, nil},
		{"all silent a while", []int64{0, 0, 0, 0}, 900 * time.Millisecond, nil},
		{"two, one silent", []int64{100, 0}, time.Second, []int{1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := watchAt(true)
			ctxs, cs := ranges(w, len(tc.rate))
			first := make([]int64, len(tc.rate))
			for i := range first {
				first[i] = 1 // each has its response and first bytes
			}
			at := feed(w, cs, first, 0, watchTick)
			feed(w, cs, tc.rate, at, tc.d)
			if got := takenOver(ctxs); !slices.Equal(got, tc.want) {
				t.Errorf("taken over %v, want %v", got, tc.want)
			}
		})
	}
}

// TestRangeLeftAloneWaitsItsBound: at the end of a run, the last range
// in flight, silent since its peers finished, is taken over once silent
// for max(minStraggle, 4 x the p99 gap), not sooner; one that fell
// silent while nothing else moved any more waits lonelyStraggle; and a
// watch that had no CPU for a while (its tick late) counts no silence
// for that while.
func TestRangeLeftAloneWaitsItsBound(t *testing.T) {
	for _, tc := range []struct {
		name         string
		peerFinished bool
		frozen       time.Duration // the watch's tick that late, at the end
		d            time.Duration // silent that long after the peer's end (100 ms after its own last bytes)
		want         bool
	}{
		{"peer finished, silent 200 ms", true, 0, 100 * time.Millisecond, false},
		{"peer finished, silent 400 ms", true, 0, 300 * time.Millisecond, true},
		{"no peer moved, silent 900 ms", false, 0, 800 * time.Millisecond, false},
		{"no peer moved, silent 1.2 s", false, 0, 1100 * time.Millisecond, true},
		{"peer finished, the watch frozen 2 s", true, 2 * time.Second, 100 * time.Millisecond, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := watchAt(true)
			ctxs, cs := ranges(w, 2)
			at := feed(w, cs, []int64{1, 1}, 0, watchTick) // both have bytes
			rate := []int64{0, 0}
			if tc.peerFinished {
				rate[1] = 100
			}
			at = feed(w, cs, rate, at, 2*watchTick) // the peer's last bytes, then its end
			w.done(cs[1])
			at = feed(w, cs[:1], []int64{0}, at, tc.d)
			if tc.frozen > 0 {
				w.tick(int64(at + tc.frozen))
			}
			if got := len(takenOver(ctxs[:1])) == 1; got != tc.want {
				t.Errorf("taken over %v, want %v", got, tc.want)
			}
		})
	}
}

// TestMidRunStragglerIsSilentWhilePeersProgress: during a run, a range
// silent while its peers deliver is taken over past minStraggle, not
// before; not when most ranges are silent with it (the machine is what
// is slow).
func TestMidRunStragglerIsSilentWhilePeersProgress(t *testing.T) {
	for _, tc := range []struct {
		rate []int64
		d    time.Duration
		want []int
	}{
		{[]int64{10, 10, 0}, minStraggle - watchTick, nil},
		{[]int64{10, 10, 0}, minStraggle + 2*watchTick, []int{2}},
		{[]int64{10, 0, 0, 0}, time.Second, nil},
	} {
		w := watchAt(false)
		ctxs, cs := ranges(w, len(tc.rate))
		first := slices.Repeat([]int64{1}, len(tc.rate))
		at := feed(w, cs, first, 0, watchTick)
		feed(w, cs, tc.rate, at, tc.d)
		if got := takenOver(ctxs); !slices.Equal(got, tc.want) {
			t.Errorf("rates %v, silent %v: taken over %v, want %v", tc.rate, tc.d, got, tc.want)
		}
	}
}

// clockedSource serves memSource's bytes 32 KiB per read, each read after
// pause(off, read) of the test's clock: off is where the request began.
type clockedSource struct {
	*memSource
	pause func(off int64, read int) time.Duration
}

func (s *clockedSource) Open(ctx context.Context, o *Object, off, n int64) (*Body, error) {
	b, err := s.memSource.Open(ctx, o, off, n)
	if err != nil {
		return nil, err
	}
	b.ReadCloser = &clockedBody{ReadCloser: b.ReadCloser, ctx: ctx, off: off, pause: s.pause}
	return b, nil
}

type clockedBody struct {
	io.ReadCloser
	ctx   context.Context
	off   int64
	reads int
	pause func(off int64, read int) time.Duration
}

func (b *clockedBody) Read(p []byte) (int, error) {
	select {
	case <-time.After(b.pause(b.off, b.reads)):
	case <-b.ctx.Done():
		return 0, b.ctx.Err()
	}
	b.reads++
	return b.ReadCloser.Read(p[:min(len(p), 32<<10)])
}

// TestTakeoversAreForOutliersOnly runs the engine on the test's clock
// (synctest): eight ranges of one object in flight at once, at the end
// of the run. Ranges all slow alike, or all silent together for longer
// than minStraggle, are not taken over; a range ten times slower than
// its peers is, once, from the byte it reached, and every byte is
// written once.
func TestTakeoversAreForOutliersOnly(t *testing.T) {
	const part = 2 << 20
	for _, tc := range []struct {
		name   string
		pause  func(off int64, read int) time.Duration
		hedged int64
		within time.Duration // the run's end, on the test's clock (0: any)
	}{
		{"uniformly slow", func(int64, int) time.Duration { return 20 * time.Millisecond }, 0, 0},
		{"all silent together for 600 ms", func(_ int64, read int) time.Duration {
			if read == 10 {
				return 600 * time.Millisecond
			}
			return 5 * time.Millisecond
		}, 0, 0},
		{"one ten times slower", func(off int64, read int) time.Duration {
			switch {
			case off == 3*part && read > 0:
				return 100 * time.Millisecond
			case off == 0:
				return 5 * time.Millisecond // it ends first: slots go idle
			}
			return 10 * time.Millisecond
		}, 1, 0},
		{"one stalls mid-body for a minute", func(off int64, read int) time.Duration {
			if off == 3*part && read == 20 {
				return time.Minute // its first 640 KiB came, then nothing: a relay that stalls
			}
			return 10 * time.Millisecond
		}, 1, 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem := newMemSource(map[string]int64{"k": 8 * part})
				src := &clockedSource{memSource: mem, pause: tc.pause}
				sink := &countSink{memSink: newMemSink(), files: map[string]*countFile{}}
				t0 := time.Now()
				sum := runEngine(t, src, sink, Options{PartSize: part, MaxRequests: 8, Adaptive: AdaptiveOff, BufferSize: 32 << 10})
				if took := time.Since(t0); tc.within > 0 && took > tc.within {
					t.Errorf("the run took %v, want at most %v: the stalled range was not taken over in time", took, tc.within)
				}
				if sum.Objects != 1 || !bytes.Equal(sink.committed["k"], mem.data["k"]) {
					t.Fatalf("summary %+v", sum)
				}
				if sum.Hedged != tc.hedged || sum.Retries != 0 || sum.Requests != sum.Ranges+sum.Hedged {
					t.Errorf("hedged %d, retries %d, %d requests for %d ranges; want %d taken over, nothing else asked again",
						sum.Hedged, sum.Retries, sum.Requests, sum.Ranges, tc.hedged)
				}
				for i, n := range sink.files["k"].writes {
					if n != 1 {
						t.Fatalf("byte %d written %d times, want once", i, n)
					}
				}
			})
		})
	}
}

// TestCrowdsAreNotTakenOver: stragglers found together at one tick are a
// crowd when more than max(crowdMin, 1/crowdShare of the ranges in
// flight): ranges lagging together say the machine is slow, so none is
// taken over; a few are.
func TestCrowdsAreNotTakenOver(t *testing.T) {
	for _, tc := range []struct {
		name   string
		silent int // of 64 ranges, the last silent ones
		end    bool
		want   int
	}{
		{"three silent at the end", 3, true, 3},
		{"eight silent at the end", 8, true, 0},
		{"three silent during the run", 3, false, 3},
		{"eight silent during the run", 8, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := watchAt(tc.end)
			ctxs, cs := ranges(w, 64)
			at := feed(w, cs, slices.Repeat([]int64{1}, 64), 0, watchTick)
			at = feed(w, cs, slices.Repeat([]int64{100}, 64), at, time.Second) // all stream a while
			rate := slices.Repeat([]int64{100}, 64)
			for i := 64 - tc.silent; i < 64; i++ {
				rate[i] = 0
			}
			feed(w, cs, rate, at, time.Second)
			if got := len(takenOver(ctxs)); got != tc.want {
				t.Errorf("taken over %d, want %d", got, tc.want)
			}
		})
	}
}

// TestCrowdHoldsTakeoversBack: after a crowd, none is taken over for the
// window, so the last ranges of a common lull, resuming one by one, are
// not taken over as they lag behind.
func TestCrowdHoldsTakeoversBack(t *testing.T) {
	w := watchAt(true)
	ctxs, cs := ranges(w, 64)
	at := feed(w, cs, slices.Repeat([]int64{1}, 64), 0, watchTick)
	at = feed(w, cs, slices.Repeat([]int64{100}, 64), at, time.Second)
	rate := slices.Repeat([]int64{100}, 64)
	for i := 56; i < 64; i++ {
		rate[i] = 0 // a crowd of 8 lags
	}
	at = feed(w, cs, rate, at, 300*time.Millisecond)
	for i := 56; i < 63; i++ {
		rate[i] = 100 // seven resume, one a little later
	}
	at = feed(w, cs, rate, at, 2*watchTick)
	if got := takenOver(ctxs); len(got) != 0 {
		t.Fatalf("taken over %v just after a crowd, want none", got)
	}
	feed(w, cs, rate, at, time.Second) // the last one stays silent: a straggler once the crowd is past
	if got := takenOver(ctxs); !slices.Equal(got, []int{63}) {
		t.Errorf("taken over %v, want [63]", got)
	}
}

// TestBudgetCountsCutsOfOneTick: the takeovers one tick finds pass the
// budget one by one, each counted as it is cut, not once its range
// returns.
func TestBudgetCountsCutsOfOneTick(t *testing.T) {
	w := new(stallWatch)
	w.init(30*time.Second, func() (bool, bool) { return w.taken.Load() < 2, true }, func(float64) time.Duration { return time.Millisecond })
	ctxs, cs := ranges(w, 64)
	at := feed(w, cs, slices.Repeat([]int64{1}, 64), 0, watchTick)
	at = feed(w, cs, slices.Repeat([]int64{100}, 64), at, time.Second)
	rate := slices.Repeat([]int64{100}, 64)
	rate[60], rate[61], rate[62], rate[63] = 0, 0, 0, 0 // found at the same tick
	feed(w, cs, rate, at, time.Second)
	if got := len(takenOver(ctxs)); got != 2 {
		t.Errorf("taken over %d, want the budget's 2", got)
	}
}

// TestLateResponseIsNoOutlier: a range whose response came late in the
// window, and whose body streams as fast as its peers', is no outlier at
// the end of a run: ranges are compared over ticks of their body only.
func TestLateResponseIsNoOutlier(t *testing.T) {
	// Times to first byte of 100 ms (median) to 400 ms (p99): a window of
	// 400 ms, and a response awaited up to 800 ms.
	w := new(stallWatch)
	w.init(30*time.Second, func() (bool, bool) { return true, true }, func(q float64) time.Duration {
		if q < 0.9 {
			return 100 * time.Millisecond
		}
		return 400 * time.Millisecond
	})
	ctxs, cs := ranges(w, 8)
	rate := slices.Repeat([]int64{100}, 8)
	rate[7] = 0 // awaiting its response
	at := feed(w, cs, rate, 0, 700*time.Millisecond)
	rate[7] = 100
	feed(w, cs, rate, at, time.Second)
	if got := takenOver(ctxs); len(got) != 0 {
		t.Errorf("taken over %v, want none", got)
	}
}

// TestSilentBodyIsTakenOverAfterTheWindow: during a run, peers whose
// reads come 150 ms apart (a busy machine: 4 x the p99 gap is 600 ms)
// do not hold back the takeover of a body that received nothing over
// the window (minStraggle here) while they moved: it is taken over
// after the window, not before.
func TestSilentBodyIsTakenOverAfterTheWindow(t *testing.T) {
	w := watchAt(false)
	ctxs, cs := ranges(w, 7)
	at := feed(w, cs, slices.Repeat([]int64{1}, 7), 0, watchTick)
	// Peers move every third tick, in three phases, so some move at
	// every tick; the last range streams as they do, then falls silent.
	step := func(silent bool) {
		at += watchTick
		k := int(at / watchTick)
		for i, c := range cs {
			if i == 6 && silent {
				continue
			}
			if (k+i)%3 == 0 {
				c.touch(300)
			}
		}
		w.tick(int64(at))
	}
	for range 20 {
		step(false)
	}
	if p99 := time.Duration(w.p99()); p99 < 150*time.Millisecond {
		t.Fatalf("p99 gap %v, want 150 ms", p99)
	}
	var cut time.Duration
	for i := range 20 {
		step(true)
		if cut == 0 && len(takenOver(ctxs)) > 0 {
			cut = time.Duration(i+1) * watchTick
		}
	}
	if got := takenOver(ctxs); !slices.Equal(got, []int{6}) {
		t.Fatalf("taken over %v, want [6]", got)
	}
	if cut < minStraggle || cut > minStraggle+3*watchTick {
		t.Errorf("taken over %v after it fell silent, want after the window (%v) and within 3 ticks of it", cut, minStraggle)
	}
}

// TestCommonPauseResumedOverTwoTicksIsNoStraggler: ranges silent
// together for 600 ms, of which half resume a tick before the others,
// are not taken over: the median range did not move over each half of
// the window.
func TestCommonPauseResumedOverTwoTicksIsNoStraggler(t *testing.T) {
	for _, end := range []bool{false, true} {
		w := watchAt(end)
		ctxs, cs := ranges(w, 8)
		at := feed(w, cs, slices.Repeat([]int64{1}, 8), 0, watchTick)
		at = feed(w, cs, slices.Repeat([]int64{100}, 8), at, time.Second)
		at = feed(w, cs, make([]int64, 8), at, 600*time.Millisecond)
		at = feed(w, cs, []int64{100, 100, 100, 100, 100, 0, 0, 0}, at, watchTick)
		feed(w, cs, slices.Repeat([]int64{100}, 8), at, time.Second)
		if got := takenOver(ctxs); len(got) != 0 {
			t.Errorf("end %v: taken over %v, want none", end, got)
		}
	}
}

// TestRangesLeftAloneAreNoCrowd: at the end of a run, six ranges silent
// since their peers finished are taken over, however many: they are
// stragglers by silence, not a lull among moving peers.
func TestRangesLeftAloneAreNoCrowd(t *testing.T) {
	w := watchAt(true)
	ctxs, cs := ranges(w, 8)
	at := feed(w, cs, slices.Repeat([]int64{1}, 8), 0, watchTick)
	at = feed(w, cs, slices.Repeat([]int64{100}, 8), at, time.Second)
	at = feed(w, cs, []int64{0, 0, 0, 0, 0, 0, 100, 100}, at, 2*watchTick) // the peers' last bytes
	w.done(cs[6])
	w.done(cs[7])
	feed(w, cs[:6], make([]int64, 6), at, time.Second)
	if got := takenOver(ctxs); !slices.Equal(got, []int{0, 1, 2, 3, 4, 5}) {
		t.Errorf("taken over %v, want the six left", got)
	}
}
