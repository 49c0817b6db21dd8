package transfer

import (
	"time"
)

// Sample is what one interval of a run did: the time series behind a
// report of throughput over time. The engine takes one per
// Options.SampleEvery from its own counters, so sampling costs nothing on
// the path of the data.
type Sample struct {
	// At is the end of the interval, measured from the start of the run;
	// Length is the interval's length (the last one may be shorter).
	At, Length time.Duration
	// Bytes, Requests, Retries and SlowDowns are counted during the
	// interval; SlowDowns are the retries the server asked for by
	// throttling.
	Bytes, Requests, Retries, SlowDowns int64
	// Objects is the number of objects that ended during the interval
	// (transferred, skipped or failed).
	Objects int64
	// InFlight is the number of requests in flight at the interval's end.
	InFlight int
	// Window is the window of requests in flight at the interval's end:
	// a series of them shows when the climb stopped (the warm-up).
	Window int
	// Lanes holds the bytes each lane moved during the interval, in the
	// order of Summary.Lanes.
	Lanes []int64
	// RequestTime and WriteTime are Summary's sums for the ranges that
	// ended during the interval: their ratio is the share of the
	// requests' time that waited on the destination (the write wait).
	RequestTime, WriteTime time.Duration
}

// counters is a reading of the engine's cumulative counters.
type counters struct {
	at                                  time.Duration
	bytes, requests, retries, slowdowns int64
	objects                             int64
	lanes                               []int64
	reqNanos, writeNanos                int64
}

func (e *Engine) read() counters {
	c := counters{
		at:        time.Since(e.start),
		bytes:     e.bytes.Load(),
		requests:  e.requests.Load(),
		retries:   e.retries.Load(),
		slowdowns: e.slowdowns.Load(),
		objects:   e.objects.Load() + e.failed.Load() + e.skipped.Load(),
		reqNanos:  e.reqNanos.Load(), writeNanos: e.writeNanos.Load(),
		lanes: make([]int64, len(e.lanes)),
	}
	for i, l := range e.lanes {
		c.lanes[i] = l.bytes.Load()
	}
	return c
}

// since is the sample between an earlier reading and c.
func (c counters) since(prev counters, inFlight int) Sample {
	s := Sample{
		At: c.at, Length: c.at - prev.at,
		Bytes: c.bytes - prev.bytes, Requests: c.requests - prev.requests,
		Retries: c.retries - prev.retries, SlowDowns: c.slowdowns - prev.slowdowns,
		Objects: c.objects - prev.objects, InFlight: inFlight,
		Lanes:       make([]int64, len(c.lanes)),
		RequestTime: time.Duration(c.reqNanos - prev.reqNanos), WriteTime: time.Duration(c.writeNanos - prev.writeNanos),
	}
	for i := range c.lanes {
		s.Lanes[i] = c.lanes[i] - prev.lanes[i]
	}
	return s
}

// sampleSince is the sample from prev to now, with the requests in
// flight and the window at its end.
func (e *Engine) sampleSince(now, prev counters) Sample {
	s := now.since(prev, e.gate.inFlightNow())
	s.Window = e.gate.bound()
	return s
}

// sampler calls Options.OnSample once per Options.SampleEvery until stop
// is closed, then once more for the rest of the run, and returns when it
// has: the caller's Run ends after the last sample.
type sampler struct {
	stop, done chan struct{}
}

// startSampler starts the sampler of a run, or returns nil when no one
// asked for samples.
func (e *Engine) startSampler() *sampler {
	if e.opts.OnSample == nil {
		return nil
	}
	s := &sampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(e.opts.SampleEvery)
		defer t.Stop()
		prev := counters{lanes: make([]int64, len(e.lanes))}
		for {
			select {
			case <-t.C:
				if time.Since(e.start)-prev.at < e.opts.SampleEvery/2 {
					// A tick queued while the sampler was late: an
					// interval this short would only be noise; the next
					// one takes its time.
					continue
				}
				now := e.read()
				e.opts.OnSample(e.sampleSince(now, prev))
				prev = now
			case <-s.stop:
				if now := e.read(); now.at > prev.at {
					e.opts.OnSample(e.sampleSince(now, prev))
				}
				return
			}
		}
	}()
	return s
}

// end takes the last sample and waits for it.
func (s *sampler) end() {
	if s != nil {
		close(s.stop)
		<-s.done
	}
}
