package transfer

import (
	"container/heap"
	"math"
	"math/rand/v2"
	"time"
)

// netModel is a simulated network and server, for the window's rule: a
// discrete-event model on a virtual clock, with no goroutine and no
// sleep. A request waits its time to first byte, then streams its part
// at the per-connection cap, sharing the aggregate cap, and the CPU's
// cap, with every request streaming.
type netModel struct {
	perConn   float64       // bytes per second one connection carries at most
	ttfb      time.Duration // the server's time to first byte, at least
	jitter    float64       // the time to first byte spreads up to this share above ttfb
	aggregate float64       // bytes per second all connections carry at most
	// cores, cpuPerByte (CPU seconds per byte moved), cpuPerReq (CPU
	// seconds per request sent) and cpuPerConn (the share of a core one
	// request in flight costs, its connection polled and its buffers
	// touched): the client's CPU caps the bytes it moves.
	cores      float64
	cpuPerByte float64
	cpuPerReq  float64
	cpuPerConn float64
	// slowAbove (requests per second, 0: none) is the server's rate
	// limit: a token bucket that refills at that rate and holds a tenth
	// of a second's; a request that finds it empty is answered SlowDown
	// (and takes no token).
	slowAbove float64
	// stormFrom and stormTo: every request answered in between is
	// answered SlowDown.
	stormFrom, stormTo time.Duration
	// straggle is the share of requests whose first byte takes ten times
	// as long.
	straggle float64

	objects int   // how many objects
	size    int64 // the size of each
	part    int64 // the part size (8 MiB)
	seed    uint64
}

// simResult is what a simulated run did.
type simResult struct {
	elapsed  time.Duration
	bytes    int64
	inFlight float64 // mean
	window   int     // at the end
	stop     string
	phases   []WindowChange
	windows  []WindowChange // each change of the window, at its tick
	slowDown int
	// rates is the throughput over each tick, in bytes per second.
	rates []float64
	tick  time.Duration
}

func (r simResult) rate() float64 { return float64(r.bytes) / r.elapsed.Seconds() }

// simEvent is a request's first byte, or a retry's due time.
type simEvent struct {
	at  time.Duration
	req *simReq
}

// simReq is one request: its slot and size, and where its stream ends.
type simReq struct {
	s      slot
	size   int64
	target float64 // the stream's progress at which it ends
	retry  bool    // a SlowDown's part, due again
}

type eventHeap []*simEvent

func (h eventHeap) Len() int           { return len(h) }
func (h eventHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h eventHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)        { *h = append(*h, x.(*simEvent)) }
func (h *eventHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

type streamHeap []*simReq

func (h streamHeap) Len() int           { return len(h) }
func (h streamHeap) Less(i, j int) bool { return h[i].target < h[j].target }
func (h streamHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *streamHeap) Push(x any)        { *h = append(*h, x.(*simReq)) }
func (h *streamHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// simRetryAfter is how long a part refused with SlowDown waits before
// its retry (the engine's backoff, without a slot).
const simRetryAfter = 50 * time.Millisecond

// run simulates the transfer of every object under a budget of budget
// requests in flight, the window adaptive (from start: 0 is
// startWindow) or fixed at the budget.
func (m netModel) run(budget, start int, adaptive bool) simResult {
	rng := rand.New(rand.NewPCG(m.seed, 7))
	var (
		now      time.Duration
		progress float64 // bytes each streaming request moved since the start
		moved    float64
		hist     latencyBuckets
		events   eventHeap
		streams  streamHeap
		parts    []int64         // sizes of the parts still to send
		sentAt   []time.Duration // the last second's requests, for the rate limit
		slows    int
		tokens   = m.slowAbove / 10
		refilled time.Duration
	)
	for range m.objects {
		for off := int64(0); off < m.size; off += m.part {
			parts = append(parts, min(m.part, m.size-off))
		}
	}
	total := int64(len(parts))
	var done int64
	var counted float64 // the bytes of the requests ended
	// reported is the bytes the run counted so far: as the engine does,
	// a streaming range adds to the count every countEvery bytes.
	reported := func() int64 {
		n := counted
		for _, q := range streams {
			n += math.Floor((progress-(q.target-float64(q.size)))/countEvery) * countEvery
		}
		return int64(n)
	}
	g := newGateAt(budget, start, adaptive, func() time.Duration { return hist.quantile(0.5) }, reported)
	g.clock = func() time.Duration { return now }
	res := simResult{tick: tickEvery}
	lastMoved, nextTick := 0.0, tickEvery

	// rate is what each streaming request moves per second now.
	rate := func() float64 {
		n := float64(len(streams))
		if n == 0 {
			return 0
		}
		capacity := m.aggregate
		if m.cores > 0 {
			free := m.cores - m.cpuPerConn*float64(g.inFlightNow())
			if len(sentAt) > 0 {
				free -= m.cpuPerReq * float64(len(sentAt)) // per second, over the last one
			}
			capacity = min(capacity, max(free, 0.01*m.cores)/m.cpuPerByte)
		}
		return min(m.perConn, capacity/n)
	}
	dispatch := func() {
		for len(parts) > 0 {
			s, ok := g.tryTake()
			if !ok {
				g.fill()
				return
			}
			size := parts[len(parts)-1]
			parts = parts[:len(parts)-1]
			d := m.ttfb + time.Duration(m.jitter*rng.Float64()*float64(m.ttfb))
			if rng.Float64() < m.straggle {
				d *= 10
			}
			sentAt = append(sentAt, now)
			heap.Push(&events, &simEvent{at: now + d, req: &simReq{s: s, size: size}})
		}
	}
	ask := func() { // the pokes the gate's sampler would answer
		select {
		case <-g.wake:
			g.tick()
		default:
		}
	}
	dispatch()
	for done < total && now < 10*time.Minute {
		// The next event: a first byte or retry, a stream's end, a tick.
		next := nextTick
		if len(events) > 0 && events[0].at < next {
			next = events[0].at
		}
		r := rate()
		if len(streams) > 0 && r > 0 {
			if end := now + time.Duration((streams[0].target-progress)/r*1e9) + 1; end < next {
				next = end
			}
		}
		dt := (next - now).Seconds()
		progress += r * dt
		moved += r * dt * float64(len(streams))
		now = next
		for len(sentAt) > 0 && sentAt[0] < now-time.Second {
			sentAt = sentAt[1:]
		}
		for len(streams) > 0 && streams[0].target <= progress+1e-6 {
			q := heap.Pop(&streams).(*simReq)
			counted += float64(q.size)
			g.release(q.s, false)
			done++
		}
		for len(events) > 0 && events[0].at <= now {
			ev := heap.Pop(&events).(*simEvent)
			q := ev.req
			if q.retry {
				parts = append(parts, q.size)
				continue
			}
			hist.add(now - q.s.sent)
			storm := now >= m.stormFrom && now < m.stormTo
			limited := false
			if m.slowAbove > 0 {
				tokens = min(m.slowAbove/10, tokens+m.slowAbove*(now-refilled).Seconds())
				refilled = now
				if limited = tokens < 1; !limited {
					tokens--
				}
			}
			if storm || limited {
				slows++
				g.release(q.s, true)
				heap.Push(&events, &simEvent{at: now + simRetryAfter, req: &simReq{size: q.size, retry: true}})
				ask()
				continue
			}
			g.answered(&q.s)
			q.target = progress + float64(q.size)
			heap.Push(&streams, q)
			ask()
		}
		if now >= nextTick {
			if adaptive {
				g.tick()
			}
			if w := g.bound(); len(res.windows) == 0 || res.windows[len(res.windows)-1].Window != w {
				res.windows = append(res.windows, WindowChange{At: now, Window: w, Phase: g.state.Phase})
			}
			res.rates = append(res.rates, (moved-lastMoved)/tickEvery.Seconds())
			lastMoved = moved
			nextTick += tickEvery
		}
		dispatch()
		ask()
		dispatch()
	}
	res.elapsed, res.bytes = now, int64(moved)
	res.inFlight, _ = g.load()
	res.window, res.stop, _ = g.window()
	res.phases, res.slowDown = g.phases(), slows
	return res
}

// fixedWindows are the fixed windows the best is sought among, up to
// budget: powers of two and the halves between them.
func fixedWindows(budget int) []int {
	var ws []int
	for w := 1; w <= budget; w *= 2 {
		ws = append(ws, w)
		if h := w + w/2; w >= 2 && h < budget && h != w {
			ws = append(ws, h)
		}
	}
	if ws[len(ws)-1] != budget {
		ws = append(ws, budget)
	}
	return ws
}

// best is the best fixed window's result and the least window within
// share of its throughput.
func (m netModel) best(budget int, share float64) (best simResult, bestW, least int) {
	results := map[int]simResult{}
	for _, w := range fixedWindows(budget) {
		r := m.run(w, 0, false)
		results[w] = r
		if bestW == 0 || r.rate() > best.rate() {
			best, bestW = r, w
		}
	}
	for _, w := range fixedWindows(budget) {
		if results[w].rate() >= share*best.rate() {
			return best, bestW, w
		}
	}
	return best, bestW, bestW
}

// reach is the time the throughput over a round trip first reached
// share of rate, from the run's start or from from.
func (r simResult) reach(rate, share float64, from, roundTrip time.Duration) time.Duration {
	n := max(1, int(roundTrip/r.tick))
	sum := 0.0
	for i := range r.rates {
		sum += r.rates[i]
		if i >= n {
			sum -= r.rates[i-n]
		}
		at := time.Duration(i+1) * r.tick
		if at-time.Duration(n)*r.tick >= from && sum/float64(n) >= share*rate {
			return at - from
		}
	}
	return math.MaxInt64
}
