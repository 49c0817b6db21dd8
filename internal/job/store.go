package job

import (
	"fmt"
	"strings"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// Store is the kind of place a location names, by which a copy's
// direction is routed (copyRoutes): an s3:// URL, "-" (standard input or
// output) or a local path. Sources are opened through the stores'
// registry (store.Registry), not here; manifests and inventories are
// listers, not stores: they say which objects a run takes from its
// source.
type Store string

// The kinds of place, and None: no destination (a benchmark keeps
// nothing).
const (
	S3    Store = "s3"
	Stdio Store = "stdio"
	Local Store = "local"
	None  Store = ""
)

// StoreOf is the kind of place loc names ("" is None: nowhere).
func StoreOf(loc string) Store {
	switch {
	case loc == "":
		return None
	case strings.HasPrefix(loc, "s3://"):
		return S3
	case loc == "-":
		return Stdio
	}
	return Local
}

// IsS3 reports whether p is an s3:// URL.
func IsS3(p string) bool { return StoreOf(p) == S3 }

// NotFoundError says a location named nothing: no object at Key, and
// nothing under Prefix. The command line maps it to its exit code and
// error code; its message is worded as a missing S3 key is (404
// NoSuchKey), which scripts match.
type NotFoundError struct {
	// URL is the location as given; Key and Prefix what it was looked up
	// as.
	URL, Key, Prefix string
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("404 NoSuchKey: %s: no such key (no object %q and nothing under %q)", e.URL, e.Key, e.Prefix)
}

// Is makes a NotFoundError transfer.ErrNotFound for errors.Is.
func (e *NotFoundError) Is(target error) bool { return target == transfer.ErrNotFound }
