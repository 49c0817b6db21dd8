package s3store

import (
	"crypto/tls"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"time"
)

// Handshakes counts the TLS handshakes of the requests sent through the
// round trippers it decorates (a Transport's lanes, by its Wrap hook): how many, how many resumed a
// session, how many failed, and the time they took. One counter serves
// every client of a run; it is safe for concurrent use.
type Handshakes struct {
	total, resumed, failed, nanos atomic.Int64
}

// HandshakeCounts are a snapshot of a Handshakes counter.
type HandshakeCounts struct {
	Total, Resumed, Failed int64
	// Time is the handshakes' summed duration (wall time, the TLS
	// handshake only: not the dial).
	Time time.Duration
}

// Sub is the counts since an earlier snapshot was.
func (c HandshakeCounts) Sub(earlier HandshakeCounts) HandshakeCounts {
	return HandshakeCounts{Total: c.Total - earlier.Total, Resumed: c.Resumed - earlier.Resumed,
		Failed: c.Failed - earlier.Failed, Time: c.Time - earlier.Time}
}

// Counts returns the counts so far (a nil counter counts nothing).
func (h *Handshakes) Counts() HandshakeCounts {
	if h == nil {
		return HandshakeCounts{}
	}
	return HandshakeCounts{Total: h.total.Load(), Resumed: h.resumed.Load(), Failed: h.failed.Load(),
		Time: time.Duration(h.nanos.Load())}
}

// RoundTripper decorates next: each request carries a trace that counts
// the handshake of the connection it dials, if it dials one.
func (h *Handshakes) RoundTripper(next http.RoundTripper) http.RoundTripper {
	return tracedTransport{next: next, h: h}
}

type tracedTransport struct {
	next http.RoundTripper
	h    *Handshakes
}

func (t tracedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return t.next.RoundTrip(t.h.traced(r))
}

// traced returns r with a trace of its own (once per request, not per
// chunk of a body): the start and end of one handshake are paired by
// the request that dialled the connection.
func (h *Handshakes) traced(r *http.Request) *http.Request {
	t := &handshakeTrace{h: h}
	t.trace = httptrace.ClientTrace{TLSHandshakeStart: t.start, TLSHandshakeDone: t.done}
	return r.WithContext(httptrace.WithClientTrace(r.Context(), &t.trace))
}

type handshakeTrace struct {
	h       *Handshakes
	started time.Time
	trace   httptrace.ClientTrace
}

func (t *handshakeTrace) start() { t.started = time.Now() }

func (t *handshakeTrace) done(cs tls.ConnectionState, err error) {
	if !t.started.IsZero() {
		t.h.nanos.Add(int64(time.Since(t.started)))
	}
	if err != nil {
		t.h.failed.Add(1)
		return
	}
	t.h.total.Add(1)
	if cs.DidResume {
		t.h.resumed.Add(1)
	}
}
