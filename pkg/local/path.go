// Package local is s3pd's local filesystem adapter: a sink that writes
// each object under a temporary name inside the destination and renames it
// into place when whole, without ever writing outside the destination.
package local

import (
	"errors"
	"fmt"
	"strings"
)

// maxNameLen is the longest file name component Linux filesystems accept.
const maxNameLen = 255

// ErrUnsafeName reports a key that would land outside the destination.
var ErrUnsafeName = errors.New("unsafe key")

// RelPath maps an object name (slash-separated, as listed) to a path
// relative to the destination root. It refuses names that would escape
// the root (absolute names, ".." components), empty or "." components,
// NUL bytes, and components longer than 255 bytes. "a..b" is a valid name.
func RelPath(name string) (string, error) {
	if name == "" {
		return "", fmt.Errorf("%w: empty name", ErrUnsafeName)
	}
	if strings.HasSuffix(name, "/") {
		return "", fmt.Errorf("%w %q: ends in \"/\"", ErrUnsafeName, name)
	}
	if strings.HasPrefix(name, "/") {
		return "", fmt.Errorf("%w %q: absolute path", ErrUnsafeName, name)
	}
	if strings.IndexByte(name, 0) >= 0 {
		return "", fmt.Errorf("%w %q: NUL byte", ErrUnsafeName, name)
	}
	rest := name
	for rest != "" {
		comp := rest
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			comp, rest = rest[:i], rest[i+1:]
		} else {
			rest = ""
		}
		switch {
		case comp == "..":
			return "", fmt.Errorf("%w %q: \"..\" component", ErrUnsafeName, name)
		case comp == "." || comp == "":
			return "", fmt.Errorf("%w %q: empty or \".\" component", ErrUnsafeName, name)
		case len(comp) > maxNameLen:
			return "", fmt.Errorf("%w %q: name component of %d bytes exceeds %d", ErrUnsafeName, name, len(comp), maxNameLen)
		}
	}
	return name, nil
}
