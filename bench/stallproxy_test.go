package bench

import (
	"errors"
	"hash/fnv"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// stallProxy is a TCP proxy in front of a server that stalls a seeded
// fraction of its connections once, part way through what the server
// sends (as a faulty middlebox or a lossy path does), where the
// emulator's own stalls come from the server's handler. A client that
// gives a stalled connection up gets a new one, which is judged anew.
type stallProxy struct {
	ln       net.Listener
	target   string
	fraction float64
	stall    time.Duration
	seed     uint64
	conns    atomic.Uint64 // connections accepted since the last reset
	stalls   atomic.Int64
	wg       sync.WaitGroup
}

// startStallProxy proxies to target on a loopback port until tb ends.
func startStallProxy(tb testing.TB, target string, fraction float64, stall time.Duration, seed uint64) *stallProxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &stallProxy{ln: ln, target: target, fraction: fraction, stall: stall, seed: seed}
	p.wg.Go(p.serve)
	tb.Cleanup(func() { ln.Close(); p.wg.Wait() })
	return p
}

func (p *stallProxy) addr() string { return p.ln.Addr().String() }

// reset makes the next run stall the same connections as the last.
func (p *stallProxy) reset() { p.conns.Store(0); p.stalls.Store(0) }

func (p *stallProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		n := p.conns.Add(1)
		p.wg.Go(func() { p.relay(c, n) })
	}
}

// roll returns, for connection n, whether it stalls and after how many
// bytes (64 KiB to 4 MiB).
func (p *stallProxy) roll(n uint64) (bool, int64) {
	h := fnv.New64a()
	var b [16]byte
	for i := range 8 {
		b[i], b[8+i] = byte(p.seed>>(8*i)), byte(n>>(8*i))
	}
	h.Write(b[:])
	x := h.Sum64()
	stalls := float64(x%1_000_000) < p.fraction*1_000_000
	return stalls, 64<<10 + int64(x>>20)%(4<<20-64<<10)
}

func (p *stallProxy) relay(c net.Conn, n uint64) {
	defer c.Close()
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer s.Close()
	go func() {
		io.Copy(s, c)
		s.(*net.TCPConn).CloseWrite()
	}()
	stalls, at := p.roll(n)
	if stalls {
		if _, err := io.CopyN(c, s, at); err != nil {
			return
		}
		p.stalls.Add(1)
		time.Sleep(p.stall) // a client that gives up closes c: the copy below fails
	}
	if _, err := io.Copy(c, s); err != nil && !errors.Is(err, net.ErrClosed) {
		return
	}
}

// proxies holds the stallProxy of each proxied endpoint ("http://addr").
var proxies sync.Map

// proxyAt returns the stallProxy serving endpoint, or nil.
func proxyAt(endpoint string) *stallProxy {
	p, ok := proxies.Load(endpoint)
	if !ok {
		return nil
	}
	return p.(*stallProxy)
}
