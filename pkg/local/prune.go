package local

import (
	"errors"
	"io/fs"
	"strings"
)

// Prune walks the sink's root and removes every regular file for which
// stale returns true, calling removed for each (before removal, or
// instead of it when dryRun). s3pd's own partial files and journals are
// left alone. It never follows a symlink.
func (s *Sink) Prune(stale func(name string) bool, dryRun bool, removed func(name string, size int64)) error {
	var errs []error
	err := fs.WalkDir(s.root.FS(), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			errs = append(errs, err)
			return nil
		}
		if !d.Type().IsRegular() || strings.HasPrefix(d.Name(), ".s3pd-") || !stale(name) {
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
