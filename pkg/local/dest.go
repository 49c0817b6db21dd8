package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/s3pd/s3pd/pkg/store"
)

// Dest is the destination side of local paths (store.Entry.Dest): a
// Sink under the root the job decides, written as opts says (its LockID
// is set per run). A copy from local files takes a CopySink, whose
// parts the kernel moves.
func Dest(opts Options) *store.Dest {
	return &store.Dest{
		Locate: func(loc string) (store.Place, error) {
			if err := CheckWritable(loc); err != nil {
				return store.Place{}, err
			}
			return store.Place{Path: loc, Dir: IsDir(loc)}, nil
		},
		Open: func(_ context.Context, _ string, o store.DestOptions) (*store.Sink, error) {
			opts := opts
			opts.LockID = o.Lock
			if o.Name != "" {
				// One object locks only its own name: downloads of other
				// objects into the same directory run together.
				opts.LockID = ObjectLockID(o.Name)
			}
			s, err := NewSink(o.Root, opts)
			if err != nil {
				return nil, err
			}
			out := &store.Sink{Sink: s, Close: s.Close}
			if o.From != nil {
				if _, ok := o.From.Source.(*Source); ok {
					out.Sink = NewCopySink(s)
				}
			}
			return out, nil
		},
		Overlap: func(src, dst string) error {
			st, err := os.Stat(src)
			return checkOverlap(filepath.Clean(src), dst, err == nil && !st.IsDir())
		},
	}
}

// IsDir reports whether dest names a directory to put objects in: it
// ends in "/" or is an existing directory.
func IsDir(dest string) bool {
	if strings.HasSuffix(dest, "/") {
		return true
	}
	st, err := os.Stat(dest)
	return err == nil && st.IsDir()
}

// checkOverlap refuses a copy onto itself or into its own tree.
func checkOverlap(src, dst string, single bool) error {
	s, err := realPath(src)
	if err != nil {
		return err
	}
	d, err := realPath(dst)
	if err != nil {
		return err
	}
	if single && IsDir(dst) {
		d = filepath.Join(d, filepath.Base(s))
	}
	switch {
	case s == d:
		return store.ErrSame
	case !single && strings.HasPrefix(d, s+string(filepath.Separator)):
		return store.ErrInside
	}
	return nil
}

// realPath resolves p's symbolic links as far as p exists, and keeps the
// rest as written, so paths that do not exist yet compare too.
func realPath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	rest := ""
	for dir := abs; ; dir = filepath.Dir(dir) {
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(real, rest), nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
		if filepath.Dir(dir) == dir {
			return abs, nil
		}
		rest = filepath.Join(filepath.Base(dir), rest)
	}
}

// CheckWritable finds the nearest existing directory at or above dest
// and checks that a file can be created there, before any request.
func CheckWritable(dest string) error {
	dir := filepath.Clean(dest)
	for {
		st, err := os.Stat(dir)
		if err == nil {
			if !st.IsDir() {
				if dir == filepath.Clean(dest) {
					dir = filepath.Dir(dir) // an existing file is replaced
					continue
				}
				return fmt.Errorf("destination %s: %s is not a directory", dest, dir)
			}
			break
		}
		if !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("destination %s: %w", dest, err)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	f, err := os.CreateTemp(dir, ".s3pd-probe-*")
	if err != nil {
		return fmt.Errorf("destination %s is not writable: %w", dest, errors.Unwrap(err))
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}
