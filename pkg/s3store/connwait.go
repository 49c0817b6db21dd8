package s3store

import (
	"context"
	"net/http/httptrace"
	"time"
)

// connWait measures how long one request waited for a new connection of
// its own: from the transport's GetConn to its GotConn, when the
// connection was not reused (a dial, and over HTTPS a handshake). A reused
// connection counts 0. It is made once per request, not per chunk.
type connWait struct {
	asked time.Time
	wait  time.Duration
	trace httptrace.ClientTrace
}

// withConnWait returns ctx with a trace that fills the returned connWait
// (traces already in ctx still run).
func withConnWait(ctx context.Context) (context.Context, *connWait) {
	c := &connWait{}
	c.trace = httptrace.ClientTrace{
		GetConn: func(string) { c.asked = time.Now() },
		GotConn: func(i httptrace.GotConnInfo) {
			if c.wait = 0; !i.Reused && !c.asked.IsZero() {
				c.wait = time.Since(c.asked)
			}
		},
	}
	return httptrace.WithClientTrace(ctx, &c.trace), c
}
