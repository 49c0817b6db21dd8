package job

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

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
		return fmt.Errorf("source and destination are the same: %s", src)
	case !single && strings.HasPrefix(d, s+string(filepath.Separator)):
		return fmt.Errorf("destination %s is inside source %s", dst, src)
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
