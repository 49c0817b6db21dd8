package job

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/s3pd/s3pd/pkg/manifest"
	"github.com/s3pd/s3pd/pkg/shard"
	"github.com/s3pd/s3pd/pkg/store"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// ScaleSpec is what --manifest and --shard ask of a run: who lists its
// objects, and which share of them this process takes.
type ScaleSpec struct {
	// Manifest is where the objects are listed instead of by
	// ListObjectsV2: "-" (Stdin), a local path or an s3:// URL ("":
	// none). It needs an S3 source.
	Manifest string
	Stdin    io.Reader
	// Stores open a manifest that is not "-" or a local path (an s3://
	// URL).
	Stores store.Registry
	// Shard is the share this process takes (nil: all).
	Shard *shard.Spec
	// Filter decides which listed objects the split counts (the
	// include/exclude rules).
	Filter func(transfer.Object) bool
}

// Scaled is who lists a run's objects and what its shard saw.
type Scaled struct {
	// Lister lists the objects (nil: the first lane's source).
	Lister transfer.Lister
	// Report is the shard's report, complete once the listing is (nil
	// without a shard).
	Report *shard.Report
}

// scale decides who lists: the manifest, under bucket and prefix, its
// entries looked up through src when it can (src nil: a local source,
// which has no manifest), or first; then this process's shard of it. A manifest is
// split as written, its entries without a size unresolved, so that every
// process computes the same split whatever its lookups return; only the
// shard's own entries are looked up, after the split.
func (s ScaleSpec) scale(first transfer.Lister, bucket, prefix string, src transfer.Source) Scaled {
	var out Scaled
	var m *manifest.Options
	if s.Manifest != "" && src != nil {
		loc := &locations{in: s.Stdin, stores: s.Stores, host: bucket, src: src}
		m = &manifest.Options{Location: s.Manifest, Bucket: bucket, Prefix: prefix, Open: loc.open}
		if st, ok := src.(store.Stater); ok {
			m.Stat = st.Stat
		}
		out.Lister = manifest.New(*m)
	}
	if s.Shard == nil {
		return out
	}
	inner := first
	if m != nil {
		opts := *m
		opts.Unresolved, opts.Repeats = true, true // the split drops repeats itself
		inner = manifest.New(opts)
	}
	out.Lister, out.Report = shard.Split(inner, *s.Shard, shard.Options{Filter: s.Filter})
	if m != nil {
		out.Lister = manifest.Resolve(out.Lister, m.Stat, m.Lookups)
	}
	return out
}

// ShardLockID is the destination lock identity of a shard ("" for
// none): shards of one DEST run together, a second run of the same
// shard or a run over all keys is refused.
func ShardLockID(spec *shard.Spec) string {
	if spec == nil {
		return ""
	}
	return fmt.Sprintf("%dof%d", spec.K, spec.N)
}

// locations opens what a manifest names: stdin, local files, an object
// of the run's own bucket (host) over the run's source src, which sends
// what the run's requests carry, or an object of another bucket of the
// same endpoint through the registry.
type locations struct {
	in     io.Reader
	stores store.Registry
	host   string
	src    transfer.Source
}

func (l *locations) open(ctx context.Context, loc string) (io.ReadCloser, error) {
	switch {
	case loc == "-":
		return io.NopCloser(l.in), nil
	case store.SchemeOf(loc) == "":
		return os.Open(loc)
	}
	if hostOf(loc) == l.host && l.src != nil {
		_, rest, _ := strings.Cut(loc, "://")
		_, key, _ := strings.Cut(rest, "/")
		return l.src.Open(ctx, &transfer.Object{Key: key, Size: -1}, 0, -1)
	}
	return l.stores.ReadAll(ctx, loc)
}

// hostOf is what names the store's root in loc: its bucket
// (s3://bucket/key), "" for a location without a scheme.
func hostOf(loc string) string {
	_, rest, ok := strings.Cut(loc, "://")
	if !ok {
		return ""
	}
	host, _, _ := strings.Cut(rest, "/")
	return host
}
