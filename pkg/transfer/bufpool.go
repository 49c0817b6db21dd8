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
