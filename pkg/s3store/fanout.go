package s3store

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// A prefix with sub-prefixes is listed by fan-out: one delimited listing
// of the prefix names its objects and its sub-prefixes ("a/", "b/", ...)
// in key order, and each sub-prefix is listed whole by its own stream,
// up to FanOut streams at once. Objects are still emitted in key order
// (a split into shards depends on the order): the sub-prefix being
// emitted streams, the ones after it fetch ahead into a buffer of at most
// fanBudget objects, so memory stays bounded whatever the listing's size.
// A flat prefix costs nothing more: the delimited listing is the listing.

// fanBudget bounds the objects fetched ahead of the one being emitted
// (about 250 bytes each), unless a Source sets its own (tests).
const fanBudget = 100_000

// fanDescend bounds how many levels a prefix holding one sub-prefix and
// nothing else is descended before fanning out ("data/" -> "data/v1/").
const fanDescend = 4

// fanout is the state the sub-prefix streams and the emitter share.
type fanout struct {
	budget   int
	mu       sync.Mutex
	cond     *sync.Cond
	buffered int  // objects fetched and not yet emitted
	head     *sub // the sub-prefix being emitted
}

// sub is one sub-prefix's listing.
type sub struct {
	prefix string
	pages  [][]transfer.Object
	done   bool
	err    error
}

// item is the next thing in key order: an object or a sub-prefix, or
// the end of a delimited page (reached, once everything before it was
// emitted: the next page is asked only then, as a plain listing does).
type item struct {
	obj     transfer.Object
	sub     *sub
	reached chan struct{}
}

// fanOut lists s.t.Prefix with up to s.t.FanOut sub-prefix streams at once.
//
// The delimited listing is trusted only from a server that answers as S3
// does: one that says its keys are URL-encoded, as they were asked, and
// whose common prefixes each extend the prefix listed up to a "/", in
// order. A server that ignores encoding-type=url is one of a kind known
// to roll keys up wrongly (one such rolls "/abs-x" up into a prefix
// "abs-x" that holds nothing, so the key would vanish from the run
// without a word): its prefix is listed flat, in one stream, which
// gives every key as the server holds it.
func (s *Source) fanOut(ctx context.Context, emit func(transfer.Object) error) error {
	l, first, err := s.delimited(ctx)
	if err != nil {
		return err
	}
	if l == nil {
		return s.flat(ctx, emit)
	}
	g, gctx := errgroup.WithContext(ctx)
	f := &fanout{budget: fanBudget}
	if s.fanBudget > 0 {
		f.budget = s.fanBudget
	}
	f.cond = sync.NewCond(&f.mu)
	stop := context.AfterFunc(gctx, func() {
		f.mu.Lock()
		f.cond.Broadcast()
		f.mu.Unlock()
	})
	defer stop()
	items := make(chan item, 1024)
	streams := make(chan struct{}, s.t.FanOut)
	g.Go(func() error {
		defer close(items)
		return s.top(gctx, g, f, items, streams, l, first)
	})
	g.Go(func() error {
		for it := range items {
			if it.reached != nil {
				close(it.reached)
				continue
			}
			if it.sub == nil {
				if err := emit(it.obj); err != nil {
					return err
				}
				continue
			}
			if err := f.drain(gctx, it.sub, emit); err != nil {
				return err
			}
		}
		return nil
	})
	return g.Wait()
}

// delimited asks the first page of the prefix's delimited listing,
// descending while the prefix holds one sub-prefix and nothing else
// ("data/" -> "data/v1/"). It returns a nil listing when the server's
// delimited listing is not to be trusted (see fanOut).
func (s *Source) delimited(ctx context.Context) (*listing, *listPage, error) {
	prefix := s.t.Prefix
	for depth := 1; ; depth++ {
		l := &listing{get: s.get, req: s.t.Req, prefix: prefix, delimiter: "/", pageSize: s.t.PageSize, stall: s.t.StallTimeout, onRetry: s.t.OnRetry}
		p, err := l.next(ctx, "")
		if err != nil {
			return nil, nil, fmt.Errorf("list s3://%s/%s page 1: %w", s.t.Bucket, prefix, err)
		}
		if !p.encoded || badPrefix(prefix, p.prefixes) != "" {
			return nil, nil, nil
		}
		if depth == fanDescend || p.truncated || len(p.contents) > 0 || len(p.prefixes) != 1 {
			return l, p, nil
		}
		prefix = p.prefixes[0]
	}
}

// badPrefix returns the first of a page's common prefixes that S3 would
// not give for a listing of prefix delimited by "/" ("" when none): each
// extends prefix, ends in "/" and comes after the one before it.
func badPrefix(prefix string, prefixes []string) string {
	last := ""
	for _, p := range prefixes {
		if len(p) <= len(prefix) || !strings.HasPrefix(p, prefix) || !strings.HasSuffix(p, "/") || p <= last {
			return p
		}
		last = p
	}
	return ""
}

// top sends the objects and sub-prefixes of the delimited listing l,
// whose first page is first, to items in key order, starting a stream
// for each sub-prefix when one of the FanOut slots is free.
func (s *Source) top(ctx context.Context, g *errgroup.Group, f *fanout, items chan<- item, streams chan struct{}, l *listing, first *listPage) error {
	prefix := l.prefix
	send := func(it item) error {
		select {
		case items <- it:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return l.pagesFrom(ctx, "s3://"+s.t.Bucket+"/"+prefix, first, func(p *listPage) error {
		if bad := badPrefix(prefix, p.prefixes); bad != "" {
			// Keys under it could be missed: no run goes on without them.
			return transfer.Permanent(fmt.Errorf("%w: the server rolled keys up into a common prefix %q, which no key of s3://%s/%s would give; list with --list-concurrency 1",
				ErrBadListing, bad, s.t.Bucket, prefix))
		}
		c, ps := p.contents, p.prefixes
		for len(c) > 0 || len(ps) > 0 {
			if len(ps) == 0 || len(c) > 0 && c[0].key < ps[0] {
				o, ok := s.object(c[0])
				c = c[1:]
				if !ok {
					continue
				}
				if err := send(item{obj: o}); err != nil {
					return err
				}
				continue
			}
			sb := &sub{prefix: ps[0]}
			ps = ps[1:]
			select {
			case streams <- struct{}{}:
			case <-ctx.Done():
				return ctx.Err()
			}
			g.Go(func() error {
				defer func() { <-streams }()
				return s.stream(ctx, f, sb)
			})
			if err := send(item{sub: sb}); err != nil {
				return err
			}
		}
		if !p.truncated {
			return nil
		}
		end := item{reached: make(chan struct{})}
		if err := send(end); err != nil {
			return err
		}
		select {
		case <-end.reached:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
}

// stream lists one sub-prefix whole into its buffer, waiting while the
// buffer is full unless it is the one being emitted.
func (s *Source) stream(ctx context.Context, f *fanout, sb *sub) error {
	l := &listing{get: s.get, req: s.t.Req, prefix: sb.prefix, pageSize: s.t.PageSize, stall: s.t.StallTimeout, onRetry: s.t.OnRetry}
	err := l.pages(ctx, "s3://"+s.t.Bucket+"/"+sb.prefix, func(p *listPage) error {
		objs := make([]transfer.Object, 0, len(p.contents))
		for _, c := range p.contents {
			if o, ok := s.object(c); ok {
				objs = append(objs, o)
			}
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		sb.pages = append(sb.pages, objs)
		f.buffered += len(objs)
		f.cond.Broadcast()
		for f.buffered >= f.budget && f.head != sb && ctx.Err() == nil {
			f.cond.Wait()
		}
		return ctx.Err()
	})
	f.mu.Lock()
	sb.done, sb.err = true, err
	f.cond.Broadcast()
	f.mu.Unlock()
	return err
}

// drain emits a sub-prefix's objects as its stream fetches them.
func (f *fanout) drain(ctx context.Context, sb *sub, emit func(transfer.Object) error) error {
	f.mu.Lock()
	f.head = sb
	f.cond.Broadcast()
	for {
		for len(sb.pages) == 0 && !sb.done && ctx.Err() == nil {
			f.cond.Wait()
		}
		if len(sb.pages) == 0 {
			err := sb.err
			f.mu.Unlock()
			if err == nil {
				err = ctx.Err()
			}
			return err
		}
		page := sb.pages[0]
		sb.pages[0] = nil
		sb.pages = sb.pages[1:]
		f.buffered -= len(page)
		f.cond.Broadcast()
		f.mu.Unlock()
		for _, o := range page {
			if err := emit(o); err != nil {
				return err
			}
		}
		f.mu.Lock()
	}
}
