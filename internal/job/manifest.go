package job

import (
	"errors"

	"github.com/s3pd/s3pd/pkg/manifest"
)

// BadManifest reports whether err is a manifest entry that cannot be
// read (a usage error: nothing may start).
func BadManifest(err error) bool {
	var le *manifest.LineError
	return errors.As(err, &le)
}
