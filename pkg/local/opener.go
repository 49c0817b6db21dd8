package local

import (
	"context"
	"fmt"
	"os"
	"syscall"

	"github.com/s3pd/s3pd/pkg/store"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// Opener is the opener of local paths (store.Registry's entry without a
// scheme): a file is a single object, named as Options.Name says; a
// directory lists every regular file under it. Of opts, FollowSymlinks
// and Report apply.
func Opener(opts SourceOptions) store.Opener {
	return func(_ context.Context, loc string, o store.Options) (*store.Opened, error) {
		switch {
		case o.Version != "":
			return nil, fmt.Errorf("source %s: local files have no versions", loc)
		case o.ServerSide:
			return nil, fmt.Errorf("source %s: local files are not copied within a store", loc)
		}
		opts := opts
		opts.Name = ""
		s, err := NewSource(loc, opts)
		if err != nil {
			return nil, err
		}
		if s.single && o.Name != nil {
			s.opts.Name = o.Name(loc)
		}
		return &store.Opened{Lanes: []transfer.Lane{{Name: "local", Source: s}}, Source: s, Single: s.single, Key: loc, Rereadable: true}, nil
	}
}

// Identity identifies a local file's bytes for an upload's journal
// (store.Identifier): its device, inode, size and modification time, as
// the file is now ("" when it cannot be read, which resumes nothing of
// its upload).
func (s *Source) Identity(o transfer.Object) string {
	st, err := os.Stat(o.Key)
	if err != nil {
		return ""
	}
	id := fmt.Sprintf("file %d %d", st.Size(), st.ModTime().UnixNano())
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		id += fmt.Sprintf(" %d:%d", uint64(sys.Dev), sys.Ino)
	}
	return id
}
