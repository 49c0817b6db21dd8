package extsort

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// Sorted lists inner's objects in key order: it lists them all into a
// Sorter holding about memory bytes (0: DefaultMemory, runs in dir), then
// emits them. It is for output a reader compares (a dry run) from a
// listing that is not in key order; it gives up streaming, so a transfer
// does not use it.
func Sorted(inner transfer.Lister, dir string, memory int) transfer.Lister {
	return &sorted{inner: inner, dir: dir, memory: memory}
}

type sorted struct {
	inner  transfer.Lister
	dir    string
	memory int
}

// record is an Object as a run stores it.
type objectRecord struct {
	Key, Name, ETag, VersionID, ChecksumAlgorithm, StorageClass string
	Size                                                        int64
	ModTime                                                     time.Time
	Checksums                                                   map[string]string `json:",omitempty"`
	Err                                                         string            `json:",omitempty"`
}

func (s *sorted) List(ctx context.Context, emit func(transfer.Object) error) error {
	st := New(s.dir, s.memory)
	defer st.Close()
	err := s.inner.List(ctx, func(o transfer.Object) error {
		r := objectRecord{Key: o.Key, Name: o.Name, ETag: o.ETag, VersionID: o.VersionID, ChecksumAlgorithm: o.ChecksumAlgorithm,
			StorageClass: o.StorageClass, Size: o.Size, ModTime: o.ModTime, Checksums: o.Checksums}
		if o.Err != nil {
			r.Err = o.Err.Error()
		}
		b, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("sort the listing: %w", err)
		}
		return st.Add(o.Key, b)
	})
	if err != nil {
		return err
	}
	return st.Each(func(_ string, val []byte) error {
		var r objectRecord
		if err := json.Unmarshal(val, &r); err != nil {
			return fmt.Errorf("sort the listing: %w", err)
		}
		o := transfer.Object{Key: r.Key, Name: r.Name, ETag: r.ETag, VersionID: r.VersionID, ChecksumAlgorithm: r.ChecksumAlgorithm,
			StorageClass: r.StorageClass, Size: r.Size, ModTime: r.ModTime, Checksums: r.Checksums}
		if r.Err != "" {
			o.Err = errors.New(r.Err)
		}
		return emit(o)
	})
}
