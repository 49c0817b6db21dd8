package cmd

import (
	"sync/atomic"

	"github.com/s3pd/s3pd/pkg/transfer"
)

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
