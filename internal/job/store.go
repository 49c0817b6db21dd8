package job

import (
	"fmt"
	"strings"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// Store names where a location's objects live. A location is what a
// command was given as SRC or DEST: an s3:// URL, "-" (standard input
// or output) or a local path. Manifests and inventories are listers, not
// stores: they say which objects a run takes from its source.
type Store string

// The stores of the registry, and None: no destination (a benchmark
// keeps nothing).
const (
	S3    Store = "s3"
	Stdio Store = "stdio"
	Local Store = "local"
	None  Store = ""
)

// storeEntry is one store of the registry: the locations it takes.
type storeEntry struct {
	store Store
	// takes reports whether loc names a place in this store.
	takes func(loc string) bool
}

// registry finds a location's store: the first entry that takes it.
// Adding a store is its package, one line here and its routes.
var registry = []storeEntry{
	{S3, func(loc string) bool { return strings.HasPrefix(loc, "s3://") }},
	{Stdio, func(loc string) bool { return loc == "-" }},
	{Local, func(string) bool { return true }},
}

// StoreOf is the store loc names ("" is None: nowhere).
func StoreOf(loc string) Store {
	if loc == "" {
		return None
	}
	for _, e := range registry {
		if e.takes(loc) {
			return e.store
		}
	}
	return None
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
