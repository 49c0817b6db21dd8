package cmd

import (
	"context"
	"sync"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// listedNames decorates a source and remembers every name it lists, so
// that --delete can tell which local files no longer have an object. It
// holds one string per listed object: --delete costs memory in
// proportion to the listing.
type listedNames struct {
	transfer.Source
	mu    sync.Mutex
	names map[string]struct{}
}

func newListedNames(src transfer.Source) *listedNames {
	return &listedNames{Source: src, names: map[string]struct{}{}}
}

// List implements transfer.Source.
func (l *listedNames) List(ctx context.Context, emit func(transfer.Object) error) error {
	return l.Source.List(ctx, func(o transfer.Object) error {
		l.mu.Lock()
		l.names[o.Name] = struct{}{}
		l.mu.Unlock()
		return emit(o)
	})
}

func (l *listedNames) has(name string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.names[name]
	return ok
}
