package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// peer is another node of the fleet, as one node's Source sees it.
type peer struct {
	i     int
	addr  string
	sh    *shared
	bytes atomic.Int64 // object bytes it sent that were passed on

	bypassed atomic.Bool
	mu       sync.Mutex
	reason   string
}

// bypass drops the peer for the rest of the run; the first reason wins.
func (p *peer) bypass(reason string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reason == "" {
		p.reason = reason
	}
	p.bypassed.Store(true)
}

func (p *peer) isBypassed() bool { return p.bypassed.Load() }

func (p *peer) bypassedFor() (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.reason, p.bypassed.Load()
}

// open asks the peer for bytes [off, off+n) of obj, waiting (within
// WaitReady of the first time it found the object missing) while the
// peer does not hold it yet. It returns nil and no error when the range
// must come from the wrapped source instead: the peer failed (it is then
// bypassed), or it did not get the object in time, or holds another
// version of it. hand is what S3 says of the object, handed with the
// body (its checksums with a whole-object one). An error is the run's
// own (its context ended).
func (p *peer) open(ctx context.Context, s *Source, obj *transfer.Object, off, n int64, hand handOver) (*transfer.Body, error) {
	opts := p.sh.opts
	delay := opts.Poll
	for {
		b, err := p.get(ctx, s, obj, off, n)
		switch {
		case err == nil:
			if off == 0 && n == obj.Size {
				b.Checksums = hand.sums
			}
			b.Encrypted = hand.encrypted
			p.served(obj.Key)
			return b, nil
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case errors.Is(err, errOtherVersion):
			return nil, nil
		case !errors.Is(err, errNotReady):
			p.bypass(err.Error())
			return nil, nil
		}
		pause, ok := p.mayWait(obj.Key, delay)
		if !ok {
			return nil, nil
		}
		if err := sleep(ctx, pause); err != nil {
			return nil, err
		}
		delay = min(2*delay, maxPoll)
	}
}

// mayWait is the pause before the peer is asked again for the object
// named key: d, or what is left of the wait when less (so the last ask
// comes as the wait ends); false once the wait is over. The wait is
// counted from the first time the peer lacked it, across the engine's
// retries of its ranges.
func (p *peer) mayWait(key string, d time.Duration) (time.Duration, bool) {
	st := p.sh.state(key)
	p.sh.mu.Lock()
	defer p.sh.mu.Unlock()
	now := time.Now()
	if st.waitUntil.IsZero() {
		st.waitUntil = now.Add(p.sh.opts.WaitReady)
	}
	left := st.waitUntil.Sub(now)
	return min(d, left), left > 0
}

// served records that the peer sends bytes of the object named key.
func (p *peer) served(key string) {
	st := p.sh.state(key)
	p.sh.mu.Lock()
	defer p.sh.mu.Unlock()
	for _, i := range st.served {
		if i == p.i {
			return
		}
	}
	st.served = append(st.served, p.i)
}

// get sends one request for bytes [off, off+n) of obj, pinned to its
// ETag, and checks the response: status, Content-Range, length, ETag.
func (p *peer) get(ctx context.Context, s *Source, obj *transfer.Object, off, n int64) (*transfer.Body, error) {
	opts := p.sh.opts
	rctx, cancel := context.WithCancel(ctx)
	var stalled atomic.Bool
	watch := time.AfterFunc(opts.Stall, func() { stalled.Store(true); cancel() })
	fail := func(err error) (*transfer.Body, error) {
		watch.Stop()
		cancel()
		if stalled.Load() {
			err = fmt.Errorf("peer %s sent nothing for %v", p.addr, opts.Stall)
		}
		return nil, err
	}
	u := "http://" + p.addr + ObjectPath + "?key=" + url.QueryEscape(obj.Key)
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, u, nil)
	if err != nil {
		return fail(err)
	}
	req.Header.Set(TokenHeader, opts.Token)
	req.Header.Set(NodeHeader, strconv.Itoa(opts.Self))
	req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", off, off+n-1))
	if obj.ETag != "" {
		req.Header.Set("If-Match", obj.ETag)
	}
	resp, err := opts.Client.Do(req)
	if err != nil {
		// Not the client's `Get "http://.../fleet/v1/object?key=..."`:
		// the reason is the peer's address and what happened.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fail(fmt.Errorf("peer %s: %w", p.addr, err))
	}
	if err := p.check(resp, obj, off, n); err != nil {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		return fail(err)
	}
	watch.Reset(opts.Stall)
	body := &peerBody{p: p, s: s, ctx: ctx, obj: obj, off: off, n: n, resp: resp.Body, watch: watch, stalled: &stalled, cancel: cancel}
	return &transfer.Body{ReadCloser: body, Off: off, Len: n, Size: obj.Size, ETag: resp.Header.Get("ETag")}, nil
}

// check accepts a response only if it carries exactly the bytes asked
// for, of the version asked for.
func (p *peer) check(resp *http.Response, obj *transfer.Object, off, n int64) error {
	switch resp.StatusCode {
	case http.StatusPartialContent:
	case http.StatusNotFound:
		return errNotReady
	case http.StatusPreconditionFailed:
		return errOtherVersion
	case http.StatusForbidden:
		return fmt.Errorf("peer %s refused the fleet token (403)", p.addr)
	default:
		return fmt.Errorf("peer %s answered %s", p.addr, resp.Status)
	}
	got, gotN, size, ok := contentRange(resp.Header.Get("Content-Range"))
	switch {
	case !ok || got != off || gotN != n || size != obj.Size:
		return fmt.Errorf("peer %s sent range %q, want bytes %d-%d/%d", p.addr, resp.Header.Get("Content-Range"), off, off+n-1, obj.Size)
	case resp.ContentLength != n:
		return fmt.Errorf("peer %s sent %d bytes, want %d", p.addr, resp.ContentLength, n)
	case obj.ETag != "" && unquote(resp.Header.Get("ETag")) != unquote(obj.ETag):
		return fmt.Errorf("peer %s sent etag %s, want %s", p.addr, resp.Header.Get("ETag"), obj.ETag)
	}
	return nil
}

// peerBody reads a range from a peer and, when the peer fails in the
// middle (an error, a short body, a stall), bypasses it and reads the
// rest of the range from the wrapped source: the engine sees one body.
type peerBody struct {
	p       *peer
	s       *Source
	ctx     context.Context
	obj     *transfer.Object
	off, n  int64
	resp    io.ReadCloser // nil once the peer is done
	watch   *time.Timer
	stalled *atomic.Bool
	cancel  context.CancelFunc
	read    int64 // bytes passed on, from the peer then the source
	peerN   int64 // of them, from the peer
	rest    *transfer.Body
}

func (b *peerBody) Read(q []byte) (int, error) {
	if b.rest != nil {
		k, err := b.rest.Read(q)
		b.read += int64(k)
		return k, err
	}
	if b.resp == nil {
		if err := b.openRest(); err != nil {
			return 0, err
		}
		return b.Read(q)
	}
	k, err := b.resp.Read(q)
	if k > 0 {
		b.watch.Reset(b.p.sh.opts.Stall)
		b.read += int64(k)
		b.peerN += int64(k)
	}
	switch {
	case b.read > b.n:
		b.p.bypass(fmt.Sprintf("peer %s sent more than the %d bytes of %s at %d", b.p.addr, b.n, b.obj.Key, b.off))
		return k, &transfer.BadResponseError{Msg: "peer sent more bytes than asked"}
	case err == nil:
		return k, nil
	case err == io.EOF && b.read == b.n:
		b.endPeer()
		return k, io.EOF
	case b.ctx.Err() != nil:
		return k, err // the engine gave the range up (a takeover, the run's end): not the peer's fault
	}
	why := fmt.Sprintf("peer %s: %s at byte %d of %d of %s", b.p.addr, err, b.read, b.n, b.obj.Key)
	if b.stalled.Load() {
		why = fmt.Sprintf("peer %s sent nothing for %v in %s", b.p.addr, b.p.sh.opts.Stall, b.obj.Key)
	}
	b.p.bypass(why)
	b.endPeer()
	if k > 0 {
		return k, nil
	}
	return b.Read(q)
}

// endPeer closes the peer's response and counts what it sent.
func (b *peerBody) endPeer() {
	if b.resp == nil {
		return
	}
	b.watch.Stop()
	b.resp.Close()
	b.cancel()
	b.resp = nil
	b.p.bytes.Add(b.peerN)
}

// openRest opens what the peer did not send from the wrapped source.
func (b *peerBody) openRest() error {
	at, left := b.off+b.read, b.n-b.read
	rest, err := b.s.fromSource(b.ctx, b.obj, at, left)
	if err != nil {
		return err
	}
	switch {
	case b.obj.ETag != "" && rest.ETag != "" && unquote(rest.ETag) != unquote(b.obj.ETag):
		err = transfer.Permanent(fmt.Errorf("etag %s, want %s: %w", rest.ETag, b.obj.ETag, transfer.ErrModified))
	case rest.Off != at || rest.Len < left:
		err = &transfer.BadResponseError{Msg: fmt.Sprintf("response carries bytes %d-%d, want %d-%d", rest.Off, rest.Off+rest.Len-1, at, at+left-1)}
	}
	if err != nil {
		rest.Close()
		return err
	}
	b.rest = rest
	return nil
}

func (b *peerBody) Close() error {
	b.endPeer()
	if b.rest != nil {
		return b.rest.Close()
	}
	return nil
}
