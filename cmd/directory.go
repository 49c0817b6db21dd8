package cmd

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/s3pd/s3pd/pkg/extsort"
	"github.com/s3pd/s3pd/pkg/s3store"
)

// listDirFunc is Source.ListDir's shape.
type listDirFunc func(ctx context.Context, prefix string, recursive bool, emit func(s3store.Entry) error) error

// sortedListDir lists as list does, in key order: a directory bucket
// lists out of order, and ls prints sorted. The entries go through an
// external sort, so memory stays bounded however long the listing.
func sortedListDir(list listDirFunc) listDirFunc {
	return func(ctx context.Context, prefix string, recursive bool, emit func(s3store.Entry) error) error {
		st := extsort.New("", 0)
		defer st.Close()
		err := list(ctx, prefix, recursive, func(e s3store.Entry) error {
			b, err := json.Marshal(e)
			if err != nil {
				return fmt.Errorf("sort the listing: %w", err)
			}
			return st.Add(e.Key, b)
		})
		if err != nil {
			return err
		}
		return st.Each(func(_ string, b []byte) error {
			var e s3store.Entry
			if err := json.Unmarshal(b, &e); err != nil {
				return fmt.Errorf("sort the listing: %w", err)
			}
			return emit(e)
		})
	}
}
