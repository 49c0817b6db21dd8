// Package manifest lists objects from a file instead of ListObjectsV2: a
// text manifest (one key per line, optionally with its size) or an S3
// Inventory (manifest.json and its gzipped CSV files). It streams both,
// holding of each entry only a 16-byte digest of its key (a key listed
// twice is listed once), or nothing at all when asked for the repeats.
package manifest

import (
	"bufio"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// Options configure a Lister.
type Options struct {
	// Location is the manifest: "-" (standard input), a local path or an
	// s3://bucket/key URL, as Open understands it.
	Location string
	// Bucket and Prefix are the transfer's: every key must be under them
	// (an inventory's other keys are skipped), and an object's name is its
	// key less Prefix, as a listing of s3://Bucket/Prefix would name it.
	Bucket, Prefix string
	// Open opens a location: "-", a local path or an s3:// URL.
	Open func(ctx context.Context, location string) (io.ReadCloser, error)
	// Stat looks an object up at the source: entries without a size, and
	// objects that changed since the manifest was written.
	Stat func(ctx context.Context, key string) (transfer.Object, error)
	// Lookups bounds the Stat calls in flight (default 16).
	Lookups int
	// Unresolved lists entries without a size as they are (size
	// unknown), with no request: what a split of the manifest needs,
	// since it must depend on the manifest alone. Wrap the split in
	// Resolve to look up only the entries it keeps.
	Unresolved bool
	// Repeats lists a key as often as the manifest names it, in the
	// manifest's order, instead of once: for a split, which keeps the
	// first of each key itself in far less memory than the digest per
	// key that listing each key once takes here (see once).
	Repeats bool
}

// Lister lists the objects of a manifest. It is a transfer.Refresher:
// an object whose ETag or size went stale is looked up again.
type Lister struct{ opts Options }

// New returns a lister of the manifest at opts.Location.
func New(opts Options) *Lister {
	if opts.Lookups <= 0 {
		opts.Lookups = 16
	}
	return &Lister{opts: opts}
}

// LineError is a bad entry in a manifest: the run is a usage error.
type LineError struct {
	Location string
	Line     int
	Err      error
}

func (e *LineError) Error() string {
	return fmt.Sprintf("manifest %s line %d: %v", e.Location, e.Line, e.Err)
}

func (e *LineError) Unwrap() error { return e.Err }

// List implements transfer.Lister: it reads the manifest once, in order.
func (l *Lister) List(ctx context.Context, emit func(transfer.Object) error) error {
	rc, err := l.opts.Open(ctx, l.opts.Location)
	if err != nil {
		return fmt.Errorf("manifest %s: %w", l.opts.Location, err)
	}
	defer rc.Close()
	br := bufio.NewReaderSize(rc, 256<<10)
	if l.opts.Unresolved {
		return l.entries(ctx, br, l.once(checked(ctx, emit)))
	}
	r := newResolver(ctx, l.opts.Stat, l.opts.Lookups, emit)
	return r.close(l.entries(ctx, br, l.once(r.add)))
}

// entries reads the manifest's entries, an inventory's or a text one's.
func (l *Lister) entries(ctx context.Context, br *bufio.Reader, add func(transfer.Object) error) error {
	if isJSON(br) {
		return l.inventory(ctx, br, add)
	}
	return l.text(br, add)
}

// checked passes entries straight to emit, as they are (no lookup, so
// no resolver, its goroutine or an allocation per entry), and stops
// once ctx is done, looking every 1,024 entries.
func checked(ctx context.Context, emit func(transfer.Object) error) func(transfer.Object) error {
	var n int
	return func(o transfer.Object) error {
		if n++; n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		return emit(o)
	}
}

// once is add, passing each key on once unless Repeats.
func (l *Lister) once(add func(transfer.Object) error) func(transfer.Object) error {
	if l.opts.Repeats {
		return add
	}
	return once(add)
}

// once passes on each key the first time it is listed, as a listing
// that repeats a key transfers it once: a manifest may name a key twice
// (lines joined from two sources), and its second copy would otherwise
// meet the first at the destination. It remembers a 128-bit digest per
// key (about 50 bytes each in the set, 50 MB for a million keys): a
// manifest is not in key order, so no window suffices, and two keys
// meet in the digest with odds far below those of a bit error in RAM.
func once(add func(transfer.Object) error) func(transfer.Object) error {
	seen := map[[16]byte]struct{}{}
	return func(o transfer.Object) error {
		sum := sha256.Sum256([]byte(o.Key))
		d := [16]byte(sum[:16])
		if _, dup := seen[d]; dup {
			return nil
		}
		seen[d] = struct{}{}
		return add(o)
	}
}

// Refresh implements transfer.Refresher.
func (l *Lister) Refresh(ctx context.Context, o *transfer.Object) error {
	if l.opts.Stat == nil {
		return errors.New("no way to look objects up")
	}
	s, err := l.opts.Stat(ctx, o.Key)
	if err != nil {
		return err
	}
	o.Size, o.ETag, o.ModTime, o.ChecksumAlgorithm, o.Checksums = s.Size, s.ETag, s.ModTime, s.ChecksumAlgorithm, s.Checksums
	return nil
}

// isJSON reports whether the manifest is a JSON document (an inventory's
// manifest.json) rather than lines of keys.
func isJSON(br *bufio.Reader) bool {
	for i := 1; ; i++ {
		b, err := br.Peek(i)
		if err != nil || len(b) < i {
			return false
		}
		switch b[i-1] {
		case ' ', '\t', '\r', '\n':
			continue
		case '{':
			return true
		}
		return false
	}
}

// name is key's name under the prefix, or an error when it is outside.
func (l *Lister) name(key string) (string, error) {
	name, ok := strings.CutPrefix(key, l.opts.Prefix)
	if !ok || name == "" {
		return "", fmt.Errorf("key %q is not under s3://%s/%s", key, l.opts.Bucket, l.opts.Prefix)
	}
	return name, nil
}

// Resolve returns a lister of what inner lists, in the same order, with
// the objects of unknown size looked up with stat, up to lookups (16
// when 0) at once. An object whose lookup fails is listed with its size
// unknown: the engine probes it and reports its error as that object's
// failure. The lister is a transfer.Refresher when inner is.
func Resolve(inner transfer.Lister, stat func(context.Context, string) (transfer.Object, error), lookups int) transfer.Lister {
	if lookups <= 0 {
		lookups = 16
	}
	r := resolving{inner: inner, stat: stat, lookups: lookups}
	if rf, ok := inner.(transfer.Refresher); ok {
		return refreshingResolver{r, rf}
	}
	return r
}

type resolving struct {
	inner   transfer.Lister
	stat    func(context.Context, string) (transfer.Object, error)
	lookups int
}

type refreshingResolver struct {
	resolving
	transfer.Refresher
}

// List implements transfer.Lister.
func (l resolving) List(ctx context.Context, emit func(transfer.Object) error) error {
	r := newResolver(ctx, l.stat, l.lookups, emit)
	return r.close(l.inner.List(ctx, r.add))
}

// resolver emits entries in manifest order, looking up those without a
// size with up to lookups stat calls in flight.
type resolver struct {
	ctx    context.Context
	cancel context.CancelFunc
	stat   func(context.Context, string) (transfer.Object, error)
	queue  chan *pending
	sem    chan struct{}
	done   chan error
}

type pending struct {
	obj   transfer.Object
	ready chan struct{} // closed once obj is resolved
}

func newResolver(ctx context.Context, stat func(context.Context, string) (transfer.Object, error), lookups int, emit func(transfer.Object) error) *resolver {
	ctx, cancel := context.WithCancel(ctx)
	r := &resolver{ctx: ctx, cancel: cancel, stat: stat, queue: make(chan *pending, 4*lookups),
		sem: make(chan struct{}, lookups), done: make(chan error, 1)}
	go func() {
		var err error
		for p := range r.queue {
			if err != nil {
				continue // drain
			}
			select {
			case <-p.ready:
			case <-ctx.Done():
				err = ctx.Err()
				continue
			}
			if err = emit(p.obj); err != nil {
				cancel()
			}
		}
		r.done <- err
	}()
	return r
}

// add queues one entry; an entry of unknown size is looked up.
func (r *resolver) add(o transfer.Object) error {
	p := &pending{obj: o, ready: make(chan struct{})}
	if o.Size >= 0 || r.stat == nil {
		close(p.ready)
	} else {
		select {
		case r.sem <- struct{}{}:
		case <-r.ctx.Done():
			return r.ctx.Err()
		}
		go func() {
			defer close(p.ready)
			defer func() { <-r.sem }()
			s, err := r.stat(r.ctx, o.Key)
			if err != nil {
				p.obj.Err = fmt.Errorf("look up its size: %w", err) // this entry fails alone
				return
			}
			p.obj.Size, p.obj.ETag, p.obj.ModTime = s.Size, s.ETag, s.ModTime
			p.obj.ChecksumAlgorithm, p.obj.Checksums = s.ChecksumAlgorithm, s.Checksums
		}()
	}
	select {
	case r.queue <- p:
		return nil
	case <-r.ctx.Done():
		return r.ctx.Err()
	}
}

// close waits for every queued entry to be emitted and returns the first
// error: readErr (reading the manifest) or emit's.
func (r *resolver) close(readErr error) error {
	if readErr != nil {
		r.cancel()
	}
	close(r.queue)
	err := <-r.done
	r.cancel()
	if readErr != nil {
		return readErr
	}
	return err
}
