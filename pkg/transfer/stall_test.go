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
	}{
		{"uniformly slow", func(int64, int) time.Duration { return 20 * time.Millisecond }, 0},
		{"all silent together for 600 ms", func(_ int64, read int) time.Duration {
			if read == 10 {
				return 600 * time.Millisecond
			}
			return 5 * time.Millisecond
		}, 0},
		{"one ten times slower", func(off int64, read int) time.Duration {
			switch {
			case off == 3*part && read > 0:
				return 100 * time.Millisecond
			case off == 0:
				return 5 * time.Millisecond // it ends first: slots go idle
			}
			return 10 * time.Millisecond
		}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem := newMemSource(map[string]int64{"k": 8 * part})
				src := &clockedSource{memSource: mem, pause: tc.pause}
				sink := &countSink{memSink: newMemSink(), files: map[string]*countFile{}}
				sum := runEngine(t, src, sink, Options{PartSize: part, MaxRequests: 8, Adaptive: AdaptiveOff, BufferSize: 32 << 10})
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
