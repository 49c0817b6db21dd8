package job

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/s3pd/s3pd/pkg/extsort"
	"github.com/s3pd/s3pd/pkg/s3store"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// Entry is one object or common prefix of a listing (ls).
type Entry = s3store.Entry

// Usage is how many objects, and bytes, are under a prefix (du).
type Usage = s3store.Usage

// Bucket reads a bucket without transferring: ls and du.
type Bucket struct {
	src       *s3store.Source
	directory bool
}

// Browse is t's bucket, read over the first lane of opts' transport.
func Browse(ctx context.Context, opts ClientOptions, t Target) (*Bucket, error) {
	lanes, err := s3store.NewLanes(ctx, t.Bucket, opts)
	if err != nil {
		return nil, err
	}
	return &Bucket{src: lanes[0].Base.With(t), directory: s3store.IsDirectoryBucket(t.Bucket)}, nil
}

// ListDir lists the objects and common prefixes under prefix (every
// object, recursive), in key order: a directory bucket, which lists out
// of order, goes through an external sort, so memory stays bounded
// however long the listing.
func (b *Bucket) ListDir(ctx context.Context, prefix string, recursive bool, emit func(Entry) error) error {
	if !b.directory {
		return b.src.ListDir(ctx, prefix, recursive, emit)
	}
	st := extsort.New("", 0)
	defer st.Close()
	err := b.src.ListDir(ctx, prefix, recursive, func(e Entry) error {
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
		var e Entry
		if err := json.Unmarshal(buf, &e); err != nil {
			return fmt.Errorf("sort the listing: %w", err)
		}
		return emit(e)
	})
}

// Usage adds up the objects under the target's prefix that filter
// picks (nil: all).
func (b *Bucket) Usage(ctx context.Context, filter func(transfer.Object) bool) (Usage, error) {
	return b.src.Usage(ctx, filter)
}

// Buckets lists the buckets the credentials own.
func (b *Bucket) Buckets(ctx context.Context) ([]Entry, error) { return b.src.Buckets(ctx) }
