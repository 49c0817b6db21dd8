package cmd

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/s3pd/s3pd/pkg/s3store"
)

// storageClasses are the values of --storage-class.
var storageClasses = []string{"STANDARD", "REDUCED_REDUNDANCY", "STANDARD_IA", "ONEZONE_IA",
	"INTELLIGENT_TIERING", "GLACIER", "DEEP_ARCHIVE", "GLACIER_IR", "EXPRESS_ONEZONE"}

// registerUploadFlags adds the AWS CLI's flags for what an upload or a
// copy sets on the objects it writes.
func registerUploadFlags(fs *pflag.FlagSet, o *s3store.UploadOptions) {
	fs.StringVar(&o.StorageClass, "storage-class", "", "storage class of uploaded and copied objects: "+strings.Join(storageClasses, ", "))
	fs.StringVar(&o.Metadata.ContentType, "content-type", "", "Content-Type of uploaded and copied objects (default: guessed from each name's extension)")
	fs.StringVar(&o.Metadata.CacheControl, "cache-control", "", `Cache-Control of uploaded and copied objects ("max-age=3600")`)
	fs.StringVar(&o.Metadata.ContentDisposition, "content-disposition", "", `Content-Disposition of uploaded and copied objects ("attachment")`)
	fs.StringVar(&o.Metadata.ContentEncoding, "content-encoding", "", `Content-Encoding of uploaded and copied objects ("gzip")`)
	fs.Var(&metadataValue{&o.Metadata.User}, "metadata", "user metadata (x-amz-meta-*) of uploaded and copied objects: KEY=VALUE,... (repeatable)")
}

// copyUsage is copy's help for those of get's flags that its other
// routes read too: they say what the flag does to files and objects.
var copyUsage = map[string]string{
	"benchmark":  "keep nothing: read SRC, count and drop the bytes (no DEST needed)",
	"overwrite":  "copy even files and objects identical at DEST",
	"size-only":  "skip files and objects of the same size at DEST, whatever their modification time or checksum (as the AWS CLI's flag)",
	"no-clobber": "never replace an existing file or object (skipped as \"exists\")",
	"no-lock":    "local DEST: do not lock it (for file systems that refuse locks): you promise no other run writes there",
	"delete":     "remove files or objects under DEST that SRC does not have (after a run without failures)",
}

// rewordForCopy gives get's flags, registered on copy, copy's help: the
// shared ones copyUsage's, and those only a download has a note that
// they take S3 to local only.
func rewordForCopy(fs *pflag.FlagSet) {
	fs.VisitAll(func(f *pflag.Flag) {
		if u, ok := copyUsage[f.Name]; ok {
			f.Usage = u
		}
		if downloadOnly(f) {
			f.Usage = "S3 to local: " + f.Usage
		}
	})
}

// refuseDownloadFlags refuses, on copy's routes other than S3 to local,
// the flags of get that only a download has.
func (opts *copyOptions) refuseDownloadFlags() error {
	var err error
	if opts.flags == nil {
		return nil
	}
	opts.flags.Visit(func(f *pflag.Flag) {
		if err == nil && downloadOnly(f) {
			err = usageErrorf("--%s applies to copies from S3 to local files (as get), not %s", f.Name, opts.route())
		}
	})
	return err
}

// route names the route of a copy that is not S3 to local, for its
// refusals.
func (opts *copyOptions) route() string {
	from, to := "local", "local"
	switch {
	case opts.src == "-":
		from = "standard input"
	case isS3(opts.src):
		from = "S3"
	}
	if isS3(opts.dest) {
		to = "S3"
	}
	if opts.benchmark && from == "local" {
		return "a --benchmark of local files"
	}
	return from + " to " + to
}

// checkStorageClass refuses a storage class S3 does not have.
func checkStorageClass(s string) error {
	if s == "" {
		return nil
	}
	for _, c := range storageClasses {
		if s == c {
			return nil
		}
	}
	return usageErrorf("--storage-class %q: want one of %s", s, strings.Join(storageClasses, ", "))
}

// metadataValue parses --metadata KEY=VALUE,KEY=VALUE.
type metadataValue struct{ m *map[string]string }

func (v *metadataValue) Type() string { return "KEY=VALUE,..." }
func (v *metadataValue) String() string {
	if v.m == nil || len(*v.m) == 0 {
		return ""
	}
	var pairs []string
	for k, val := range *v.m {
		pairs = append(pairs, k+"="+val)
	}
	return strings.Join(pairs, ",")
}

func (v *metadataValue) Set(s string) error {
	if *v.m == nil {
		*v.m = map[string]string{}
	}
	for _, pair := range strings.Split(s, ",") {
		k, val, ok := strings.Cut(pair, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return fmt.Errorf("%q: want KEY=VALUE", pair)
		}
		(*v.m)[strings.TrimSpace(k)] = val
	}
	return nil
}
