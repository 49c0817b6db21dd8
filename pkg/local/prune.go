package local

import (
	"context"
	"errors"
	"io/fs"
	"path"
	"strings"
)

// Prune (store.Pruner) walks the sink's root and removes every regular file for which
// stale returns true, calling removed for each (before removal, or
// instead of it when dryRun). Work folders at any depth (partial files,
// journals, the lock of this run or of a run into a folder below) are
// left alone, and so is the conflict copy NAME+ConflictSuffix
// of a name that is not stale (no key can end in the suffix). It never
// follows a symlink.
func (s *Sink) Prune(_ context.Context, stale func(name string) bool, dryRun bool, removed func(name string, size int64)) error {
	var errs []error
	err := fs.WalkDir(s.root.FS(), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			errs = append(errs, err)
			return nil
		}
		if d.IsDir() && path.Base(name) == WorkDir {
			// Any depth: a folder below may be another run's DEST.
			return fs.SkipDir
		}
		if !d.Type().IsRegular() || !stale(name) || s.conflictCopy(name, stale) {
			return nil
		}
		var size int64
		if info, err := d.Info(); err == nil {
			size = info.Size()
		}
		removed(name, size)
		if !dryRun {
			if err := s.root.Remove(name); err != nil {
				errs = append(errs, err)
			}
		}
		return nil
	})
	return errors.Join(append(errs, err)...)
}

// conflictCopy reports whether name is the conflict copy of an object
// that is not stale.
func (s *Sink) conflictCopy(name string, stale func(string) bool) bool {
	sfx := s.opts.ConflictSuffix
	orig, ok := strings.CutSuffix(name, sfx)
	return sfx != "" && ok && orig != "" && !stale(orig)
}
