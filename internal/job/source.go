package job

import (
	"context"
	"errors"

	"github.com/s3pd/s3pd/pkg/store"
)

// openSource opens loc through stores, with what the job decided of it
// (that it names a prefix for sure; the name a single object lands at).
// A store that could not be set up is a *SpecError when setupIsSpec,
// else its own error.
func openSource(ctx context.Context, stores store.Registry, loc string, o store.Options, setupIsSpec bool) (*store.Opened, error) {
	if stores == nil {
		return nil, specErrorf("%s: no store to open it with", loc)
	}
	if _, err := stores.Lookup(loc); err != nil {
		return nil, &SpecError{Err: err}
	}
	src, err := stores.Open(ctx, loc, o)
	var se *store.SetupError
	if errors.As(err, &se) {
		if setupIsSpec {
			return nil, &SpecError{Err: se.Err}
		}
		return nil, se.Err
	}
	return src, err
}
