package cmd

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/s3pd/s3pd/pkg/extsort"
	"github.com/s3pd/s3pd/pkg/s3store"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// openSource starts the run of a command that reads a bucket without
// transferring (ls, du) and returns its environment (never nil) and a
// source over the bucket, built as get builds its first lane.
func openSource(ctx context.Context, fac *Factory, fs *pflag.FlagSet, t s3store.Target) (f *runEnv, src *bucket, err error) {
	f, settings, _, err := startRun(fac, fs, nil, false)
	if err != nil {
		return f, nil, err
	}
	if t.Bucket == "" && settings.Region == "" {
		settings.Region = "us-east-1" // listing buckets: no bucket to ask
	}
	c, err := s3Client(ctx, f, settings)
	if err != nil {
		return f, nil, startError(ctx, err)
	}
	t.OnRetry = f.logListRetry
	b, err := browse(ctx, c, t)
	if err != nil {
		return f, nil, startError(ctx, err)
	}
	return f, b, nil
}

// acceptQuiet registers get's --quiet and --no-progress on a command
// that never shows a progress bar, hidden, so that scripts can pass the
// same flags to all.
func acceptQuiet(fs *pflag.FlagSet) {
	fs.BoolP("quiet", "q", false, "no progress bar (this command never shows one)")
	fs.Bool("no-progress", false, "no progress bar (this command never shows one)")
	for _, name := range []string{"quiet", "no-progress"} {
		if err := fs.MarkHidden(name); err != nil {
			panic(err) // registered just above
		}
	}
}

// bucket reads a bucket without transferring: ls and du.
type bucket struct {
	src       *s3store.Source
	directory bool
}

// browse is t's bucket, read over the first lane of opts' transport.
func browse(ctx context.Context, opts s3store.ClientOptions, t s3store.Target) (*bucket, error) {
	lanes, err := s3store.NewLanes(ctx, t.Bucket, opts)
	if err != nil {
		return nil, err
	}
	return &bucket{src: lanes[0].Base.With(t), directory: s3store.IsDirectoryBucket(t.Bucket)}, nil
}

// ListDir lists the objects and common prefixes under prefix (every
// object, recursive), in key order: a directory bucket, which lists out
// of order, goes through an external sort, so memory stays bounded
// however long the listing.
func (b *bucket) ListDir(ctx context.Context, prefix string, recursive bool, emit func(s3store.Entry) error) error {
	if !b.directory {
		return b.src.ListDir(ctx, prefix, recursive, emit)
	}
	st := extsort.New("", 0)
	defer st.Close()
	err := b.src.ListDir(ctx, prefix, recursive, func(e s3store.Entry) error {
		buf, err := json.Marshal(e)
		if err != nil {
			return fmt.Errorf("sort the listing: %w", err)
		}
		return st.Add(e.Key, buf)
	})
	if err != nil {
		return err
	}
	return st.Each(func(_ string, buf []byte) error {
		var e s3store.Entry
		if err := json.Unmarshal(buf, &e); err != nil {
			return fmt.Errorf("sort the listing: %w", err)
		}
		return emit(e)
	})
}

// Usage adds up the objects under the target's prefix that filter
// picks (nil: all).
func (b *bucket) Usage(ctx context.Context, filter func(transfer.Object) bool) (s3store.Usage, error) {
	return b.src.Usage(ctx, filter)
}

// Buckets lists the buckets the credentials own.
func (b *bucket) Buckets(ctx context.Context) ([]s3store.Entry, error) { return b.src.Buckets(ctx) }
