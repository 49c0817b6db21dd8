package cmd

import (
	"sync"
	"sync/atomic"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// listedNames remembers every name the listing gives, so that --delete
// can tell which local files no longer have an object. It holds one
// string per listed object: --delete costs memory in proportion to the
// listing.
type listedNames struct {
	mu       sync.Mutex
	names    map[string]struct{}
	complete atomic.Bool // the listing ended without error
}

func newListedNames() *listedNames { return &listedNames{names: map[string]struct{}{}} }

// Listed implements transfer.ListObserver.
func (l *listedNames) Listed(o transfer.Object) {
	l.mu.Lock()
	l.names[o.Name] = struct{}{}
	l.mu.Unlock()
}

// ListingDone implements transfer.ListObserver; --delete runs only after
// a run without error, whose listing is complete.
func (l *listedNames) ListingDone() { l.complete.Store(true) }

func (l *listedNames) has(name string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.names[name]
	return ok
}

// listedBytes adds up the sizes the listing gives, so the progress bar
// can show a total and an ETA once the listing is complete.
type listedBytes struct {
	bytes    atomic.Int64
	objects  atomic.Int64
	complete atomic.Bool
}

// Listed implements transfer.ListObserver.
func (l *listedBytes) Listed(o transfer.Object) {
	l.bytes.Add(max(o.Size, 0))
	l.objects.Add(1)
}

// ListingDone implements transfer.ListObserver.
func (l *listedBytes) ListingDone() { l.complete.Store(true) }

// totals is the bytes and objects listed, and whether the listing is
// complete.
func (l *listedBytes) totals() (int64, int64, bool) {
	if l == nil {
		return 0, 0, false
	}
	return l.bytes.Load(), l.objects.Load(), l.complete.Load()
}

// listings fans listing events out to several observers.
type listings []transfer.ListObserver

func (ls listings) Listed(o transfer.Object) {
	for _, l := range ls {
		l.Listed(o)
	}
}

func (ls listings) ListingDone() {
	for _, l := range ls {
		l.ListingDone()
	}
}
