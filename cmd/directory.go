package cmd

import (
	"fmt"
	"strings"

	"github.com/s3pd/s3pd/internal/job"
	"github.com/s3pd/s3pd/pkg/config"
	"github.com/s3pd/s3pd/pkg/s3store"
)

// directoryLine is the summary's line for a run from directory bucket.
func directoryLine(bucket string) string {
	return fmt.Sprintf("source: directory bucket (S3 Express One Zone, zone %s): sessions from CreateSession, ETags not MD5s", s3store.DirectoryZone(bucket))
}

// directorySource is the bucket a run's source names when it is a
// directory bucket, else "".
func directorySource(spec job.Spec) string {
	src := ""
	switch {
	case spec.Get != nil:
		src = spec.Get.Source
	case spec.Copy != nil:
		src = spec.Copy.Src
	}
	u, err := s3store.ParseRawURL(src)
	if err != nil || !s3store.IsDirectoryBucket(u.Bucket) {
		return ""
	}
	return u.Bucket
}

// directoryFlags are the flags naming what a directory bucket lacks.
type directoryFlags struct {
	versionID, sseC, requestPayer, storageClass, sse string
}

// refuseDirectory refuses, in one line and before any request, a flag
// that asks bucket, a directory bucket, for what it does not have (nil
// for any other bucket).
func refuseDirectory(bucket string, f directoryFlags) error {
	if !s3store.IsDirectoryBucket(bucket) {
		return nil
	}
	lacks := func(what string) error {
		return usageErrorf("%s: directory bucket %s does not support %s", what, bucket, strings.TrimPrefix(what, "--"))
	}
	switch {
	case f.versionID != "":
		return usageErrorf("--version-id: directory bucket %s has no versioning", bucket)
	case f.sseC != "":
		return usageErrorf("--sse-c: directory bucket %s does not support customer-provided keys (SSE-C)", bucket)
	case f.requestPayer != "":
		return lacks("--request-payer")
	case f.storageClass != "" && f.storageClass != "EXPRESS_ONEZONE":
		return usageErrorf("--storage-class %s: directory bucket %s stores only EXPRESS_ONEZONE", f.storageClass, bucket)
	case f.sse == "aws:kms:dsse":
		return usageErrorf("--sse aws:kms:dsse: directory bucket %s supports only AES256 and aws:kms", bucket)
	}
	return nil
}

// shownBucket is what config show says of the bucket a URL names.
type shownBucket struct {
	Name string `json:"name"`
	// Kind is "directory" (S3 Express One Zone) or "general-purpose".
	Kind string `json:"kind"`
	Zone string `json:"zone,omitempty"`
	// Endpoint is where a directory bucket's requests go ("" when that
	// needs a region that is not set).
	Endpoint string `json:"endpoint,omitempty"`
}

// showBucket says what kind of bucket url names, with no request.
func showBucket(url string, s config.Settings) (*shownBucket, error) {
	u, err := s3store.ParseRawURL(url)
	if err != nil || u.Bucket == "" {
		return nil, usageErrorf("config show %s: want an s3://bucket URL", url)
	}
	b := &shownBucket{Name: u.Bucket, Kind: "general-purpose"}
	if !s3store.IsDirectoryBucket(u.Bucket) {
		return b, nil
	}
	b.Kind, b.Zone = "directory", s3store.DirectoryZone(u.Bucket)
	switch {
	case s.EndpointURL != "":
		b.Endpoint, _ = config.RedactURL(s.EndpointURL)
	case s.Region != "":
		b.Endpoint = s3store.ZonalEndpoint(u.Bucket, s.Region)
	}
	return b, nil
}

func (b *shownBucket) line() string {
	if b.Kind != "directory" {
		return "bucket: " + b.Name + ": general purpose bucket"
	}
	where := "zonal endpoint " + b.Endpoint
	if b.Endpoint == "" {
		where = "no region set: give --region (the zone id does not name it)"
	}
	return fmt.Sprintf("bucket: %s: directory bucket (S3 Express One Zone, zone %s), %s", b.Name, b.Zone, where)
}
