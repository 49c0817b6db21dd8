package job

import (
	"fmt"

	"github.com/s3pd/s3pd/pkg/transfer"
)

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
