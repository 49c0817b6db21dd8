package job

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/s3pd/s3pd/pkg/store"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// ErrIncompleteListing refuses --delete after a listing that did not
// complete: what it left out is not known to be gone.
var ErrIncompleteListing = errors.New("--delete: the listing did not complete: nothing deleted")

// Listed remembers every name the listing gives, so that --delete can
// tell which files or objects at the destination no longer have a
// source. It holds one string per listed object: --delete costs memory
// in proportion to the listing.
type Listed struct {
	mu       sync.Mutex
	names    map[string]struct{}
	complete atomic.Bool // the listing ended without error
}

// NewListed returns an empty record.
func NewListed() *Listed { return &Listed{names: map[string]struct{}{}} }

// Listed implements transfer.ListObserver.
func (l *Listed) Listed(o transfer.Object) {
	l.mu.Lock()
	l.names[o.Name] = struct{}{}
	l.mu.Unlock()
}

// ListingDone implements transfer.ListObserver; --delete runs only after
// a run without error, whose listing is complete.
func (l *Listed) ListingDone() { l.complete.Store(true) }

// Complete reports whether the listing ended without error.
func (l *Listed) Complete() bool { return l.complete.Load() }

// Has reports whether the listing gave name.
func (l *Listed) Has(name string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.names[name]
	return ok
}

// stale picks, for --delete, a name at the destination that keep picks
// (the include and exclude rules) and the listing did not give.
func (l *Listed) stale(keep func(name string) bool) func(name string) bool {
	return func(name string) bool { return keep(name) && !l.Has(name) }
}

// PruneWith is --delete's step for a destination that prunes itself
// (store.Pruner), after a run without failures: it removes what keep
// picks and the listing did not give, reporting each; with dryRun it
// only reports them. It refuses when the listing did not complete.
func (l *Listed) PruneWith(ctx context.Context, dst store.Pruner, keep func(name string) bool, dryRun bool, report func(name string, size int64)) error {
	if !l.Complete() {
		return ErrIncompleteListing
	}
	return dst.Prune(ctx, l.stale(keep), dryRun, report)
}
