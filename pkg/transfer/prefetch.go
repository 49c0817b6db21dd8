package transfer

import (
	"context"
	"fmt"
	"io"
	"sync"
)

// Prefetch holds one range that was opened before the run, by a probe
// that learned a single object's size from it, and serves it once to the
// engine, so that its bytes are not fetched twice. Its Lanes wrap the
// lanes' sources: the first Open from the range's first byte gets the
// open body, whatever length the engine planned for that range (the
// probe asks before it knows the object's size, so the engine may plan
// a whole-object request, or parts longer than the probe's, for an
// object of more than MaxParts parts). A shorter range is served from
// the body's first bytes; a longer one reads the body's bytes, then
// the rest from the wrapped source in one request. Every other Open
// goes to the wrapped source. Served as a whole-object response, the
// body carries the object's checksums (which the probe's HEAD gave the
// object), as S3's whole-object response does. Close closes the body if
// it was never served, at the latest when the run ends.
type Prefetch struct {
	mu   sync.Mutex
	key  string
	body *Body // nil once served or closed
}

// NewPrefetch holds body, an open range of the object named key.
func NewPrefetch(key string, body *Body) *Prefetch {
	return &Prefetch{key: key, body: body}
}

// Lanes returns lanes with each source wrapped so that it serves p's
// range; the lanes share it, so whichever lane the engine picks for the
// range serves it.
func (p *Prefetch) Lanes(lanes []Lane) []Lane {
	out := make([]Lane, len(lanes))
	for i, l := range lanes {
		var src Source = &prefetched{Source: l.Source, p: p}
		if cs, ok := l.Source.(Checksummer); ok {
			src = &prefetchedSums{prefetched: src.(*prefetched), sums: cs}
		}
		out[i] = Lane{Name: l.Name, Source: src}
	}
	return out
}

// Close closes the range if it was not served.
func (p *Prefetch) Close() error {
	p.mu.Lock()
	b := p.body
	p.body = nil
	p.mu.Unlock()
	if b == nil {
		return nil
	}
	return b.Close()
}

// take returns the held body, once, if off is its first byte in the
// object named key.
func (p *Prefetch) take(key string, off int64) *Body {
	p.mu.Lock()
	defer p.mu.Unlock()
	b := p.body
	if b == nil || key != p.key || off != b.Off {
		return nil
	}
	p.body = nil
	return b
}

// prefetched is a source that serves its Prefetch's range once and
// delegates everything else to the source it wraps.
type prefetched struct {
	Source
	p *Prefetch
}

// Open implements Source.
func (s *prefetched) Open(ctx context.Context, obj *Object, off, n int64) (*Body, error) {
	b := s.p.take(obj.Key, off)
	if b == nil {
		return s.Source.Open(ctx, obj, off, n)
	}
	if n < 0 {
		n = b.Size - off // the whole object
	}
	if off == 0 && n == b.Size && b.Checksums == nil && obj.Checksums != nil {
		// A whole-object response carries the object's checksums; the
		// ranged probe's did not, so they come from its HEAD.
		whole := *b
		whole.Checksums = obj.Checksums
		b = &whole
	}
	switch {
	case n == b.Len:
		return b, nil
	case n < b.Len:
		// The bytes past n are dropped when the body is closed.
		short := *b
		short.ReadCloser = struct {
			io.Reader
			io.Closer
		}{io.LimitReader(b.ReadCloser, n), b.ReadCloser}
		short.Len = n
		return &short, nil
	}
	long := *b
	long.ReadCloser = &spliced{ctx: ctx, src: s.Source, obj: obj, held: b, off: b.Off + b.Len, n: n - b.Len}
	long.Len = n
	return &long, nil
}

// spliced reads a held body, then bytes [off, off+n) of obj from src, in
// one request sent when the held bytes run out.
type spliced struct {
	ctx    context.Context
	src    Source
	obj    *Object
	held   *Body
	read   int64 // of the held bytes
	off, n int64
	rest   *Body // nil until the held bytes are read
}

func (s *spliced) Read(p []byte) (int, error) {
	if s.rest == nil {
		k, err := s.held.Read(p)
		s.read += int64(k)
		switch {
		case err != io.EOF:
			return k, err
		case k > 0:
			return k, nil
		case s.read < s.held.Len:
			return 0, io.ErrUnexpectedEOF // a short body: retried
		}
		if err := s.openRest(); err != nil {
			return 0, err
		}
	}
	return s.rest.Read(p)
}

// openRest asks for the bytes after the held ones, of the same object.
func (s *spliced) openRest() error {
	rest, err := s.src.Open(s.ctx, s.obj, s.off, s.n)
	if err != nil {
		return err
	}
	s.held.Close()
	s.rest = rest
	switch {
	case s.held.ETag != "" && rest.ETag != "" && rest.ETag != s.held.ETag:
		return Permanent(fmt.Errorf("etag %s, want %s: %w", rest.ETag, s.held.ETag, ErrModified))
	case rest.Off != s.off || rest.Len < s.n:
		return &BadResponseError{fmt.Sprintf("response carries bytes %d-%d, want %d-%d", rest.Off, rest.Off+rest.Len-1, s.off, s.off+s.n-1)}
	}
	return nil
}

func (s *spliced) Close() error {
	if s.rest == nil {
		return s.held.Close()
	}
	return s.rest.Close()
}

// prefetchedSums is a prefetched source whose wrapped source is a
// Checksummer: the decorator hides no capability of what it wraps.
type prefetchedSums struct {
	*prefetched
	sums Checksummer
}

// Checksums implements Checksummer.
func (s *prefetchedSums) Checksums(ctx context.Context, obj *Object) (map[string]string, error) {
	return s.sums.Checksums(ctx, obj)
}
