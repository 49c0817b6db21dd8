package job

import (
	"errors"

	"github.com/s3pd/s3pd/pkg/local"
	"github.com/s3pd/s3pd/pkg/manifest"
	"github.com/s3pd/s3pd/pkg/s3store"
	"github.com/s3pd/s3pd/pkg/shard"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// The names below are the stores' and listers' small types and
// functions that the command line needs for its flags, checks and
// messages. They are re-exported here so that cmd depends on the job
// alone, not on each store (architecture_test.go holds the rule).

// URL is an s3:// URL parsed: bucket, key, and whether it names a
// prefix for sure.
type URL = s3store.URL

// ParseURL parses an s3:// URL, its key's wildcards turned into rules.
func ParseURL(s string) (URL, error) { return s3store.ParseURL(s) }

// ParseRawURL parses an s3:// URL, its key taken literally.
func ParseRawURL(s string) (URL, error) { return s3store.ParseRawURL(s) }

// Target is how an S3 source is read: bucket, prefix or object,
// version, request options, verification.
type Target = s3store.Target

// Request is what every S3 request of a run carries (requester pays,
// expected owner, an SSE-C key).
type Request = s3store.Request

// UploadOptions are what objects written to S3 get.
type UploadOptions = s3store.UploadOptions

// The checksums an upload may send with every part.
const (
	CRC64NVME = s3store.CRC64NVME
	CRC32C    = s3store.CRC32C
)

// DefaultCopyThreshold is the largest single CopyObject (5 GiB).
const DefaultCopyThreshold = s3store.DefaultCopyThreshold

// IsDirectoryBucket reports whether bucket is a directory bucket (S3
// Express One Zone), by its name.
func IsDirectoryBucket(bucket string) bool { return s3store.IsDirectoryBucket(bucket) }

// DirectoryZone is a directory bucket's zone ("" for another bucket).
func DirectoryZone(bucket string) string { return s3store.DirectoryZone(bucket) }

// ZonalEndpoint is where a directory bucket's requests go in region.
func ZonalEndpoint(bucket, region string) string { return s3store.ZonalEndpoint(bucket, region) }

// ErrNoCredentials says no credentials were found for signed requests.
var ErrNoCredentials = s3store.ErrNoCredentials

// NoCredentials reports whether err means no credentials were found.
func NoCredentials(err error) bool { return s3store.NoCredentials(err) }

// CertificateError is a server certificate that cannot be trusted, with
// what to do about it.
type CertificateError = s3store.CertificateError

// EndpointError is an endpoint that cannot be reached (refused, no such
// host) or that speaks another scheme than its URL, in plain words.
type EndpointError = s3store.EndpointError

// ErrBadListing is a listing the server answered wrongly.
var ErrBadListing = s3store.ErrBadListing

// ErrUnaccounted is a run whose listed objects do not each have one
// verdict: an internal error (transfer.UnaccountedError).
var ErrUnaccounted = transfer.ErrUnaccounted

// StatusOf is the status and code of the server's answer that err
// carries (ok false: none).
func StatusOf(err error) (status int, code string, ok bool) {
	var se *s3store.StatusError
	if !errors.As(err, &se) {
		return 0, "", false
	}
	return se.Status, se.Code, true
}

// LocalOptions are how local files are written (local.Options).
type LocalOptions = local.Options

// DirectMode is whether a local destination writes with O_DIRECT.
type DirectMode = local.DirectMode

// The direct I/O modes of a local destination.
const (
	DirectOff  = local.DirectOff
	DirectOn   = local.DirectOn
	DirectAuto = local.DirectAuto
)

// The states a local destination reports of direct I/O.
const (
	DirectStateOff      = local.DirectStateOff
	DirectStateOn       = local.DirectStateOn
	DirectStateFallback = local.DirectStateFallback
)

// StageSize is the size of a direct I/O stage for parts of partSize
// with requests in flight.
func StageSize(partSize int64, requests int) int { return local.StageSize(partSize, requests) }

// ErrSymlink and ErrSpecial are entries of a local source skipped by
// design: a link not followed, a file that is not a regular file.
var (
	ErrSymlink = local.ErrSymlink
	ErrSpecial = local.ErrSpecial
)

// ShardSpec is shard K of N.
type ShardSpec = shard.Spec

// ShardEnvCount is the variable that gives N to --shard auto in a
// Kubernetes Indexed Job.
const ShardEnvCount = shard.EnvCount

// ParseShard parses --shard K/N.
func ParseShard(v string) (ShardSpec, error) { return shard.Parse(v) }

// ShardFromEnv reads K and N from a Kubernetes Indexed Job or a Slurm
// job array.
func ShardFromEnv(getenv func(string) string) (ShardSpec, error) { return shard.FromEnv(getenv) }

// CheckShards says what keeps the shards' reports from covering one
// listing exactly once (nothing: they do).
func CheckShards(reports []ShardReport) []string { return shard.Check(reports) }

// BadManifest reports whether err is a manifest entry that cannot be
// read (a usage error: nothing may start).
func BadManifest(err error) bool {
	var le *manifest.LineError
	return errors.As(err, &le)
}
