package raid

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// fstabEntry returns the first non-comment line of the fstab file whose
// mount point is point, or "" when there is none. A missing file has none.
func fstabEntry(file, point string) (string, error) {
	b, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read fstab %s: %w", file, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if fstabPoint(line) == point {
			return strings.TrimSpace(line), nil
		}
	}
	return "", nil
}

// fstabPoint returns the mount point field of an fstab line, "" for blank
// lines and comments.
func fstabPoint(line string) string {
	f := strings.Fields(line)
	if len(f) < 2 || strings.HasPrefix(f[0], "#") {
		return ""
	}
	return filepath.Clean(unescapeOctal(f[1]))
}

// appendFstab appends line to the fstab file, adding a newline first when
// the file does not end with one, and creating the file if needed.
func appendFstab(file, line string) error {
	b, err := os.ReadFile(file)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("append to fstab %s: %w", file, err)
	}
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("append to fstab %s: %w", file, err)
	}
	prefix := ""
	if len(b) > 0 && b[len(b)-1] != '\n' {
		prefix = "\n"
	}
	if _, err := f.WriteString(prefix + line + "\n"); err != nil {
		f.Close()
		return fmt.Errorf("append to fstab %s: %w", file, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("append to fstab %s: %w", file, err)
	}
	return nil
}

// removeFstab removes every line for point from the fstab file, replacing
// the file atomically and keeping its mode. It reports the removed lines.
func removeFstab(file, point string) ([]string, error) {
	b, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("edit fstab %s: %w", file, err)
	}
	var kept bytes.Buffer
	var removed []string
	lines := strings.SplitAfter(string(b), "\n")
	for _, line := range lines {
		if fstabPoint(line) == point {
			removed = append(removed, strings.TrimSpace(line))
			continue
		}
		kept.WriteString(line)
	}
	if len(removed) == 0 {
		return nil, nil
	}
	fi, err := os.Stat(file)
	if err != nil {
		return nil, fmt.Errorf("edit fstab %s: %w", file, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), ".fstab-s3pd-*")
	if err != nil {
		return nil, fmt.Errorf("edit fstab %s: %w", file, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(kept.Bytes()); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("edit fstab %s: %w", file, err)
	}
	if err := tmp.Chmod(fi.Mode().Perm()); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("edit fstab %s: %w", file, err)
	}
	if err := tmp.Close(); err != nil {
		return nil, fmt.Errorf("edit fstab %s: %w", file, err)
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		return nil, fmt.Errorf("edit fstab %s: %w", file, err)
	}
	return removed, nil
}
