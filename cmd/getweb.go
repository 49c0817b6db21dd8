package cmd

import (
	"net/url"
	"os"

	"github.com/spf13/pflag"

	"github.com/s3pd/s3pd/pkg/config"
	"github.com/s3pd/s3pd/pkg/httpstore"
	"github.com/s3pd/s3pd/pkg/s3store"
	"github.com/s3pd/s3pd/pkg/store"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// webSource is get's source of files over http(s)://: one URL given as
// SRC, or the list of --input-file.
type webSource struct {
	// checksum is --checksum ALG:HEX; inputFile --input-file.
	checksum, inputFile string
	// items are the files to fetch, once check has read them (nil: the
	// source is not http(s)://).
	items []httpstore.Item
}

func (w *webSource) register(fs *pflag.FlagSet) {
	fs.StringVar(&w.checksum, "checksum", "", "ALG:HEX (sha256, md5, crc32c, sha1, sha512): the digest the file of an http(s):// SRC must have, checked before it lands")
	fs.StringVar(&w.inputFile, "input-file", "", `fetch the http(s):// URLs this file lists ("-": stdin), one a line, optionally followed by the name to save it as, into the directory DEST`)
}

// checkArgs checks the count of get's arguments with --input-file:
// DEST (none with --benchmark), or a SRC too, which checkWeb refuses.
// It returns the arguments with SRC "" when there is none.
func (w *webSource) checkArgs(args []string, benchmark bool) ([]string, error) {
	want := 1
	if benchmark {
		want = 0
	}
	switch {
	case len(args) < want || len(args) > 2:
		return nil, usageErrorf("get --input-file FILE takes DEST, the directory the files land in (none with --benchmark), got %d argument(s)", len(args))
	case len(args) == want:
		return append([]string{""}, args...), nil // the file lists the URLs
	}
	return args, nil
}

// checkWeb checks get's flags for an http(s):// source and reads what
// it fetches: the one URL, or the input file's.
func (opts *getOptions) checkWeb(f *Factory) error {
	w := &opts.web
	if err := checkModes(opts.output, opts.benchmark, opts.dest); err != nil {
		return err
	}
	if err := opts.checkKeep(s3store.URL{}); err != nil {
		return err
	}
	if flag := opts.s3Only(f); flag != "" {
		return usageErrorf("%s applies to S3 objects, not to files fetched over http(s)://", flag)
	}
	if w.inputFile != "" && opts.src != "" {
		return usageErrorf("--input-file lists the URLs: give DEST alone, not a SRC too")
	}
	if w.inputFile == "" {
		it := httpstore.Item{URL: opts.src}
		if w.checksum != "" {
			d, err := httpstore.ParseChecksum(w.checksum)
			if err != nil {
				return usageErrorf("--%v", err)
			}
			it.Checksum = d
		}
		w.items = []httpstore.Item{it}
		return nil
	}
	switch {
	case w.checksum != "":
		return usageErrorf("--checksum checks the one URL of SRC: give each URL of --input-file its own, on an indented line under it (checksum=ALG=HEX)")
	case opts.dest == "-":
		return usageErrorf("--input-file lands its files in the directory DEST: DEST - takes one URL")
	}
	if fi, err := os.Stat(opts.dest); opts.dest != "" && err == nil && !fi.IsDir() {
		return usageErrorf("--input-file lands its files in the directory DEST: %s is a file", printable(opts.dest))
	}
	items, err := httpstore.ReadInputFile(w.inputFile)
	if err != nil {
		return usageError(err)
	}
	if len(items) == 0 {
		return usageErrorf("input file %s lists no URL", printable(w.inputFile))
	}
	w.items = items
	return nil
}

// s3Only is the first flag given that only an S3 source has ("": none).
func (opts *getOptions) s3Only(f *Factory) string {
	spec, _ := opts.scale.spec(f.Getenv)
	switch {
	case opts.versionID != "":
		return "--version-id"
	case opts.req.RequestPayer != "":
		return "--request-payer"
	case opts.req.ExpectedBucketOwner != "":
		return "--expected-bucket-owner"
	case opts.ssec.given():
		return "--sse-c"
	case opts.scale.manifest != "":
		return "--manifest"
	case opts.scale.shard != "" || spec != nil:
		return "--shard"
	case opts.delete:
		return "--delete"
	case opts.rules.raw:
		return "--raw"
	}
	return ""
}

// shown is the source as messages name it: the URL redacted, or the
// input file.
func (w *webSource) shown(src string) string {
	if w.inputFile != "" {
		return "--input-file " + w.inputFile
	}
	return httpstore.Redact(src)
}

// endpoint sets the endpoint of a run from http(s):// to the first
// URL's scheme and host: the run's network cards are probed against it,
// not S3's endpoint, and its log and report name it.
func (w *webSource) endpoint(s config.Settings) config.Settings {
	if w.items == nil {
		return s
	}
	if u, err := url.Parse(w.items[0].URL); err == nil {
		s.EndpointURL = u.Scheme + "://" + u.Host
	}
	return s
}

// stores is the registry of a run from http(s):// over the run's lanes,
// the other stores as base opens them.
func (w *webSource) stores(base storeOptions) store.Registry {
	o := httpstore.OpenerOptions{Lanes: httpLanes(base.s3.Client.Transport)}
	if w.inputFile != "" {
		o.Items = w.items
	} else {
		o.Checksum = w.items[0].Checksum
	}
	base.http = o
	return stores(base)
}

// webOrigin names a file fetched over http(s):// by its URL, redacted.
func webOrigin(o transfer.Object) string { return o.Key }
