package local

import (
	"errors"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// FreeSpace is how many bytes an unprivileged writer may still write on
// the file system that holds the destination.
func (s *Sink) FreeSpace() (int64, error) {
	var st unix.Statfs_t
	if err := unix.Fstatfs(s.rootFd, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * st.Bsize, nil
}

// Landed is how many of obj's bytes the destination already holds: all
// of them when the file at its final name is complete and unchanged
// (Check would skip it), else the blocks an interrupted run's partial
// file has allocated, which a resume keeps. A destination that held
// nothing when the sink opened costs no system call.
func (s *Sink) Landed(obj transfer.Object) int64 {
	if obj.Size <= 0 || s.empty && !s.opts.NoClobber || s.opts.DryRun {
		return 0 // (Check would create a directory marker's directory)
	}
	var skip *transfer.SkipError
	if err := s.Check(obj); errors.As(err, &skip) {
		return obj.Size
	}
	if s.opts.NoResume {
		return 0
	}
	rel, err := s.keyPath(obj.Name)
	if err != nil {
		return 0
	}
	partials, _ := filepath.Glob(filepath.Join(s.dir, WorkDir, partialHash(rel)+"-*.partial"))
	var held int64
	for _, p := range partials {
		var st syscall.Stat_t
		if syscall.Stat(p, &st) == nil {
			held = max(held, st.Blocks*512)
		}
	}
	return min(held, obj.Size)
}
