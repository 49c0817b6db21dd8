package cmd

import (
	"github.com/spf13/pflag"
)

// routeAnnotation marks, on a flag, the only route of copy it applies
// to; its one value is downloadRoute.
const (
	routeAnnotation = "s3pd-route"
	downloadRoute   = "download"
)

// registerFlags adds every flag of get to fs, bound to opts. get and
// copy both call it: a copy from S3 to local runs as get, so it has the
// same flags with the same meaning (copy rewords the help of those its
// other routes share).
func (opts *getOptions) registerFlags(fs *pflag.FlagSet) {
	addSettingsFlags(fs)
	opts.output.register(fs)
	opts.rules.register(fs)
	opts.scale.register(fs)
	fs.BoolVar(&opts.benchmark, "benchmark", false, "keep nothing: count and drop the bytes (no DEST needed)")
	fs.BoolVar(&opts.sink.Overwrite, "overwrite", false, "replace files even when they are complete and unchanged")
	fs.BoolVar(&opts.sink.SizeOnly, "size-only", false, "keep a file of the object's size whatever its modification time (as the AWS CLI's flag; by default both must match)")
	fs.BoolVar(&opts.sink.NoClobber, "no-clobber", false, "never replace an existing file, even one that appears during the run")
	fs.BoolVar(&opts.sink.NoLock, "no-lock", false, "do not lock DEST (for file systems that refuse locks): you promise no other run writes there")
	fs.BoolVar(&opts.delete, "delete", false, "remove local files under DEST whose keys no longer exist (after a run without failures)")
	fs.StringVar(&opts.req.RequestPayer, "request-payer", "", `confirm that the requester pays ("requester")`)
	fs.StringVar(&opts.req.ExpectedBucketOwner, "expected-bucket-owner", "", "account ID the bucket must belong to")
	opts.ssec.register(fs)
	fs.AddFlagSet(opts.downloadFlags())
}

// downloadFlags are the flags of get that only a download has: each is
// marked with routeAnnotation, and copy refuses them on its other
// routes. A flag added here is refused there until a route reads it.
func (opts *getOptions) downloadFlags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("download", pflag.ContinueOnError)
	opts.output.report.register(fs)
	fs.StringVar(&opts.sink.ConflictSuffix, "conflict-suffix", "", `when a key is both an object and a prefix ("a" and "a/b"), save the object as "a"+SUFFIX instead of failing it; keys that end in SUFFIX are refused`)
	fs.BoolVar(&opts.output.verifyExisting, "verify-existing", false, "read files that look unchanged (size and mtime) and compare them with the objects' checksums (CRC64NVME, CRC32C, CRC32, else an MD5 ETag), fetching again those that differ: repairs damaged files without deleting DEST (rclone's --checksum compares so too)")
	fs.BoolVar(&opts.sink.NoResume, "no-resume", false, "start partial files of interrupted runs over instead of resuming them")
	fs.BoolVar(&opts.noSpaceCheck, "no-space-check", false, "do not compare what is still to land with DEST's free space before the first byte (exit 2 when it does not fit)")
	fs.StringVar(&opts.versionID, "version-id", "", "version of a single object")
	opts.web.register(fs)
	opts.fleet.register(fs)
	fs.VisitAll(func(f *pflag.Flag) {
		f.Annotations = map[string][]string{routeAnnotation: {downloadRoute}}
	})
	return fs
}

// downloadOnly says f is one of get's flags that only a download has.
func downloadOnly(f *pflag.Flag) bool {
	v := f.Annotations[routeAnnotation]
	return len(v) == 1 && v[0] == downloadRoute
}
