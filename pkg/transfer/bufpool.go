package transfer

// bufPool lends the copy buffers of one size. A range takes one only
// while it holds a request slot, so no more than the budget are ever out
// at once, and the pool keeps up to that many: its memory is the most
// buffers of its size the run held at once, and a buffer is made once.
// (A sync.Pool drops what it holds at every garbage collection: a run of
// small objects made a buffer every few requests, and that garbage drove
// the heap, and the peak RSS with 256 requests in flight, to twice what
// the buffers in use need.)
// Taking and returning one is a channel operation per request, never
// per buffer of data.
type bufPool struct {
	free chan []byte
	make func() []byte // a new buffer; tests count them
}

// newBufPool returns a pool of buffers of size bytes that keeps up to
// most of them.
func newBufPool(size, most int) *bufPool {
	return &bufPool{free: make(chan []byte, max(most, 1)), make: func() []byte { return make([]byte, size) }}
}

// get lends a buffer: a returned one, or a new one.
func (p *bufPool) get() []byte {
	select {
	case b := <-p.free:
		return b
	default:
		return p.make()
	}
}

// put returns b; beyond the pool's bound it is left to the collector.
func (p *bufPool) put(b []byte) {
	select {
	case p.free <- b:
	default:
	}
}

// buffers lends the copy buffers of a run's ranges: small ones to ranges
// of at most smallRange bytes, and to the others BufferSize when it is
// set, or else the largest that bufferMemory allows each request of the
// window the range was sent under (defaultBuffer: 128 KiB up to 128
// requests in flight, 64 KiB for 256). A window held at its knee, far
// below the budget, so reads and writes in pieces twice as large: on
// loopback 256 x 1 MiB, 64 KiB pieces cost 15-20 % more CPU per byte.
type buffers struct {
	small, wide, narrow *bufPool
	// wideUpTo is the widest window whose requests take wide buffers (0:
	// none: every range takes narrow ones).
	wideUpTo int
	// window is the window now, read only when a wide buffer returns.
	window func() int
}

// newBuffers returns the buffers of a run under a budget of most
// requests; size is Options.BufferSize, sized says it was defaulted, so
// that buffers follow the window, which window reads.
func newBuffers(size int, sized bool, most int, window func() int) buffers {
	b := buffers{small: newBufPool(min(size, smallBuffer), most), narrow: newBufPool(size, most), window: window}
	if wide := defaultBuffer(1); sized && wide > size {
		b.wideUpTo = bufferMemory / wide
		b.wide = newBufPool(wide, b.wideUpTo)
	}
	return b
}

// pool is where a range of n bytes sent under a window of w requests
// takes its buffer.
func (b *buffers) pool(n int64, w int) *bufPool {
	switch {
	case n <= smallRange:
		return b.small
	case w <= b.wideUpTo:
		return b.wide
	}
	return b.narrow
}

// put returns buf to p, the pool it came from: a wide buffer is left to
// the collector once the window is too wide for them, so that the
// buffers kept stay within bufferMemory.
func (b *buffers) put(p *bufPool, buf []byte) {
	if p == b.wide && b.window() > b.wideUpTo {
		return
	}
	p.put(buf)
}
