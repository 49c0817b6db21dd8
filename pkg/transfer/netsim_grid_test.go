package transfer

import (
	"math"
	"testing"
	"time"
)

// simCase is one network of the grid, under one budget. short, where
// set, says why the rule falls short of a target there, and holds the
// bounds it does meet instead (so that it gets no worse).
type simCase struct {
	name   string
	m      netModel
	budget int
	short  *simShort
}

// simShort is where a case stands against the targets it misses: the
// least throughput share, the most in-flight ratio and round trips.
type simShort struct {
	why                 string
	share, load, rounds float64
}

// The grid's targets: the throughput at least simShare of the best fixed
// window (simOneShare for one object: its parts are one or two waves,
// and a climb costs a part's time; within 1.25x of the best time),
// the mean in flight at most simLoad times the least window within 95 %
// of the best, 90 % of the best throughput within simRounds round trips.
const (
	simShare    = 0.95
	simOneShare = 0.8
	simLoad     = 1.25
	simRounds   = 20
)

const (
	simMB  = 1e6
	simGB  = 1e9
	simKiB = 1 << 10
	simMiB = 1 << 20
	simGiB = 1 << 30
)

// cpu is a client of n cores: 0.5 ns of CPU per byte (a copy, a
// checksum and TLS: 2 GB/s a core), 100 µs per request, and a
// thousandth of a core per request in flight.
func cpu(m netModel, n float64) netModel {
	m.cores, m.cpuPerByte, m.cpuPerReq, m.cpuPerConn = n, 0.5e-9, 100e-6, 0.001
	return m
}

// simNet is a model with per-connection rate perConn, a time to first byte
// from ttfb to (1+jitter) x ttfb, an aggregate cap, and objects of size
// bytes in 8 MiB parts.
func simNet(perConn float64, ttfb time.Duration, jitter, aggregate float64, size int64) netModel {
	return netModel{perConn: perConn, ttfb: ttfb, jitter: jitter, aggregate: aggregate, size: size, part: 8 * simMiB, seed: 1}
}

// sized gives m enough objects for the best window to run about
// seconds (at most 60,000 requests) and at least simSteady round trips,
// one object at least. The estimate of the best counts each request's
// time to first byte, and the server's rate limit.
func sized(m netModel, budget int, seconds float64) netModel {
	perReq := min(m.part, m.size)
	perConn := float64(perReq) / (m.roundTrip().Seconds() + float64(perReq)/m.perConn)
	est := min(m.aggregate, float64(budget)*perConn)
	if m.cores > 0 {
		est = min(est, m.cores/m.cpuPerByte)
	}
	if m.slowAbove > 0 {
		est = min(est, m.slowAbove*float64(perReq))
	}
	parts := max(1, (m.size+m.part-1)/m.part)
	steady := est * simSteady * m.roundTrip().Seconds() / float64(m.size)
	m.objects = max(1, min(int(est*seconds/float64(m.size)), int(60000/parts)), int(math.Ceil(steady)))
	return m
}

// simSteady is the least round trips a grid case runs for: the climb
// takes some 10 of them, so its cost is a few percent of the run, and
// the targets judge the window where it settled.
const simSteady = 400

// roundTrip is m's median time to first byte.
func (m netModel) roundTrip() time.Duration {
	return m.ttfb + time.Duration(m.jitter/2*float64(m.ttfb))
}

// simGrid is the grid: per connection 2-100 MB/s, time to first byte
// 5-60 ms, aggregate 0.5-25 GB/s, 2-192 cores, objects 64 KiB-1 GiB,
// budgets 64-1,024.
func simGrid() []simCase {
	ms := time.Millisecond
	one := func(m netModel) netModel { m.objects = 1; return m }
	cases := []simCase{
		{"S3, 1 GiB objects, 85 MB/s, 300 needed", cpu(simNet(85*simMB, 30*ms, 0.5, 25*simGB, simGiB), 192), 1024, nil},
		{"one 512 MiB object, 12.5 MB/s, 5-55 ms", one(simNet(12.5*simMB, 5*ms, 10, 25*simGB, 512*simMiB)), 256, nil},
		{"one 1 GiB object, 2 MB/s, 60 ms", one(simNet(2*simMB, 60*ms, 0.2, 0.5*simGB, simGiB)), 64, nil},
		{"one 1 GiB object, 100 MB/s, 5 ms", one(simNet(100*simMB, 5*ms, 0.5, 25*simGB, simGiB)), 256,
			&simShort{"its 128 parts are one wave for a fixed 128, and the climb from 32 sends them in two", 0.6, simLoad, simRounds}},
		{"64 KiB objects, 100 MB/s, 5 ms, 192 cores", cpu(simNet(100*simMB, 5*ms, 0.5, 25*simGB, 64*simKiB), 192), 1024,
			&simShort{"each of the five steps to 1,024 waits kneeSpan (4 round trips) for its measure", 0.94, simLoad, 28}},
		{"64 KiB objects, 2 MB/s, 60 ms", simNet(2*simMB, 60*ms, 0.5, 25*simGB, 64*simKiB), 64, nil},
		{"aggregate 0.5 GB/s, 100 MB/s, 16 cores", cpu(simNet(100*simMB, 5*ms, 0.5, 0.5*simGB, 64*simMiB), 16), 256,
			&simShort{"8 in flight carry the aggregate; the window halves and trims to kneeFloor (16) at least, and 64 of 8 MiB take a second to drain at 0.5 GB/s", simShare, 4.6, simRounds}},
		{"2 cores, 100 MB/s, 5 ms", cpu(simNet(100*simMB, 5*ms, 0.5, 25*simGB, 64*simMiB), 2), 256, nil},
		{"2 cores, 12.5 MB/s, 30 ms", cpu(simNet(12.5*simMB, 30*ms, 0.5, 25*simGB, 64*simMiB), 2), 1024,
			&simShort{"the knee settles at 288, a trim above the least window of 256 (a trim to 216 moves less), and the climb's 512 and each probe to 576 take most of a second to drain (8 MiB parts at 10 MB/s each)", simShare, 1.3, simRounds}},
		{"16 cores, 4 MiB, 12.5 MB/s, 30 ms", cpu(simNet(12.5*simMB, 30*ms, 0.5, 25*simGB, 4*simMiB), 16), 256, nil},
		{"16 cores, 16 MiB, 100 MB/s, 30 ms", cpu(simNet(100*simMB, 30*ms, 0.5, 25*simGB, 16*simMiB), 16), 512,
			&simShort{"384 moves 97 % of 512, but its sample, taken once 512 drained with its requests in step, reads under 95 % of the budget's, and the window goes back to the budget", simShare, 1.32, simRounds}},
		{"aggregate 5 GB/s, 50 MB/s, 15 ms", cpu(simNet(50*simMB, 15*ms, 0.5, 5*simGB, 16*simMiB), 64), 512,
			&simShort{"the knee settles at 144 (a trim to 108 moves a tenth less), and each probe to 288 holds 288 for 200 ms and the drain of its 8 MiB parts at 17 MB/s each", simShare, 1.3, simRounds}},
		{"1 MiB objects, 2 MB/s, 5 ms", cpu(simNet(2*simMB, 5*ms, 0.5, 25*simGB, simMiB), 192), 1024, nil},
		{"256 KiB objects, 25 MB/s, 60 ms, 8 cores", cpu(simNet(25*simMB, 60*ms, 0.5, 2*simGB, 256*simKiB), 8), 128, nil},
		{"stragglers, 85 MB/s, 30 ms", stragglers(cpu(simNet(85*simMB, 30*ms, 0.5, 25*simGB, 64*simMiB), 64)), 512, nil},
	}
	limited := cpu(simNet(85*simMB, 30*ms, 0.5, 25*simGB, simMiB), 64)
	limited.slowAbove = 3500 // requests a second, as S3 serves a prefix
	cases = append(cases, simCase{"SlowDown above 3,500 requests/s, 1 MiB, 85 MB/s", limited, 512, nil})
	for i := range cases {
		if cases[i].m.objects == 0 {
			cases[i].m = sized(cases[i].m, cases[i].budget, 3)
		}
	}
	return cases
}

func stragglers(m netModel) netModel { m.straggle = 0.02; return m }

// TestSimGrid runs the rule over the grid against the best fixed window
// each network has: the throughput, the requests in flight, and how
// soon the window reaches its throughput.
func TestSimGrid(t *testing.T) {
	worst := map[string]float64{}
	worstAt := map[string]string{}
	note := func(target string, v float64, c string, higherWorse bool) {
		if w, ok := worst[target]; !ok || higherWorse && v > w || !higherWorse && v < w {
			worst[target], worstAt[target] = v, c
		}
	}
	for i, c := range simGrid() {
		if i%simEvery != simEvery-1 {
			continue
		}
		a := c.m.run(c.budget, 0, true)
		best, bestW, least := c.m.best(c.budget, 0.95)
		rt := c.m.roundTrip()
		share := a.rate() / best.rate()
		load := a.inFlight / float64(least)
		reach := a.reach(best.rate(), 0.9, 0, rt)
		rts := float64(reach) / float64(rt)
		note("throughput / best fixed", share, c.name, false)
		note("mean in flight / least window at 95%", load, c.name, true)
		note("round trips to 90%", rts, c.name, true)
		t.Logf("%s: %.3f of fixed %d (%.0f MB/s), mean in flight %.1f (least at 95%%: %d), 90%% in %.1f round trips, window %d (%s), %d requests",
			c.name, share, bestW, best.rate()/simMB, a.inFlight, least, rts, a.window, a.stop, int(a.bytes/c.m.part))
		want := simShort{share: simShare, load: simLoad, rounds: simRounds}
		if c.m.objects == 1 {
			want.share = simOneShare
		}
		if c.short != nil {
			t.Logf("%s: short of the targets: %s", c.name, c.short.why)
			want = *c.short
		}
		if share < want.share {
			t.Errorf("%s: throughput %.3f of the best fixed window %d, want at least %.2f (windows %v)", c.name, share, bestW, want.share, a.windows)
		}
		if load > want.load {
			t.Errorf("%s: mean in flight %.1f, %.2fx the least window within 95%% of the best (%d), want at most %.2fx", c.name, a.inFlight, load, least, want.load)
		}
		if rts > want.rounds {
			t.Errorf("%s: 90%% of the best throughput after %.1f round trips, want at most %.0f (windows %v)", c.name, rts, want.rounds, a.windows)
		}
	}
	for _, k := range []struct {
		name   string
		target float64
	}{{"throughput / best fixed", simShare}, {"mean in flight / least window at 95%", simLoad}, {"round trips to 90%", simRounds}} {
		t.Logf("worst %s: %.3f against a target of %.2f (%s)", k.name, worst[k.name], k.target, worstAt[k.name])
	}
}

// TestSimSlowDownStorm: every request is answered SlowDown for a
// second, then none is; the window is back at 90 % of what it moved
// before within 20 round trips of the storm's end.
func TestSimSlowDownStorm(t *testing.T) {
	for _, c := range []simCase{
		{"85 MB/s, 30 ms", cpu(simNet(85*simMB, 30*time.Millisecond, 0.5, 25*simGB, 64*simMiB), 64), 256, nil},
		{"12.5 MB/s, 30 ms", cpu(simNet(12.5*simMB, 30*time.Millisecond, 0.5, 25*simGB, 16*simMiB), 64), 512, nil},
		{"100 MB/s, 5 ms", cpu(simNet(100*simMB, 5*time.Millisecond, 0.5, 25*simGB, 16*simMiB), 16), 256, nil},
	}[:max(1, 3/simEvery)] {
		m := sized(c.m, c.budget, 6)
		m.stormFrom, m.stormTo = 2*time.Second, 3*time.Second
		a := m.run(c.budget, 0, true)
		// What the window moved before the storm: the mean over its last
		// half second.
		before := 0.0
		n := int(500 * time.Millisecond / a.tick)
		end := int(m.stormFrom / a.tick)
		for _, r := range a.rates[end-n : end] {
			before += r / float64(n)
		}
		rt := m.roundTrip()
		back := a.reach(before, 0.9, m.stormTo, rt)
		t.Logf("%s: %.0f MB/s before, back to 90%% %.1f round trips after the storm (%d SlowDowns)", c.name, before/simMB, float64(back)/float64(rt), a.slowDown)
		if back > 20*rt {
			t.Errorf("%s: back to 90%% of %.0f MB/s %v after the storm, want within 20 round trips (%v); windows %v",
				c.name, before/simMB, back, 20*rt, a.windows)
		}
	}
}
