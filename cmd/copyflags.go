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
