package job

import (
	"context"

	"github.com/s3pd/s3pd/pkg/store"
)

// openSource opens loc through stores, with what the job decided of it
// (that it names a prefix for sure; the name a single object lands at).
func openSource(ctx context.Context, stores store.Registry, loc string, o store.Options) (*store.Opened, error) {
	if stores == nil {
		return nil, specErrorf("%s: no store to open it with", loc)
	}
	if _, err := stores.Lookup(loc); err != nil {
		return nil, &SpecError{Err: err}
	}
	return stores.Open(ctx, loc, o)
}
