package transfer

import (
	"context"
	"sync"
)

// Prefetch holds one range that was opened before the run, by a probe
// that learned a single object's size from it, and serves it once to the
// engine, so that range is not fetched twice. Its Lanes wrap the lanes'
// sources: an Open of exactly that range (the same offset and length, or
// the whole object when the range is all of it) gets the open body, the
// first time only; every other Open goes to the wrapped source. An Open
// from the range's first byte with another length means the range will
// never be asked for: the body is closed then, and Close closes it at the
// latest, when the run ends.
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

// take returns the held body if [off, off+n) of the object key is its
// range (n < 0: the whole object), and closes it if the object's first
// byte is asked for in another range.
func (p *Prefetch) take(key string, off, n int64) *Body {
	p.mu.Lock()
	defer p.mu.Unlock()
	b := p.body
	if b == nil || key != p.key || off != b.Off {
		return nil
	}
	p.body = nil
	if n == b.Len || n < 0 && b.Off == 0 && b.Len == b.Size {
		return b
	}
	if off == 0 {
		b.Close()
		return nil
	}
	p.body = b
	return nil
}

// prefetched is a source that serves its Prefetch's range once and
// delegates everything else to the source it wraps.
type prefetched struct {
	Source
	p *Prefetch
}

// Open implements Source.
func (s *prefetched) Open(ctx context.Context, obj *Object, off, n int64) (*Body, error) {
	if b := s.p.take(obj.Key, off, n); b != nil {
		return b, nil
	}
	return s.Source.Open(ctx, obj, off, n)
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
