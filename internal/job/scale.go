package job

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/s3pd/s3pd/pkg/manifest"
	"github.com/s3pd/s3pd/pkg/s3store"
	"github.com/s3pd/s3pd/pkg/shard"
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
	// Clients reach the buckets a manifest in S3 is read from.
	Clients s3store.ClientOptions
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
// entries looked up through src (src nil: a local source, which has no
// manifest), or first; then this process's shard of it. A manifest is
// split as written, its entries without a size unresolved, so that every
// process computes the same split whatever its lookups return; only the
// shard's own entries are looked up, after the split.
func (s ScaleSpec) scale(first transfer.Lister, bucket, prefix string, src *s3store.Source) Scaled {
	var out Scaled
	var m *manifest.Options
	if s.Manifest != "" && src != nil {
		loc := &locations{in: s.Stdin, clients: s.Clients, sources: map[string]*s3store.Source{bucket: src}}
		m = &manifest.Options{Location: s.Manifest, Bucket: bucket, Prefix: prefix, Open: loc.open, Stat: src.Stat}
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

// ManifestPrefix is the prefix a --manifest run's URL names: with a
// manifest, s3://b/p always means the prefix p/.
func ManifestPrefix(key string) string {
	if key != "" && !strings.HasSuffix(key, "/") {
		key += "/"
	}
	return key
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

// locations opens what a manifest names: stdin, local files, objects
// in any bucket of the same endpoint.
type locations struct {
	in      io.Reader
	clients s3store.ClientOptions
	mu      sync.Mutex
	sources map[string]*s3store.Source
}

func (l *locations) open(ctx context.Context, loc string) (io.ReadCloser, error) {
	switch StoreOf(loc) {
	case Stdio:
		return io.NopCloser(l.in), nil
	case S3:
		u, err := s3store.ParseURL(loc)
		if err != nil {
			return nil, err
		}
		src, err := l.source(ctx, u.Bucket)
		if err != nil {
			return nil, err
		}
		return src.Open(ctx, &transfer.Object{Key: u.Key, Size: -1}, 0, -1)
	}
	return os.Open(loc)
}

// source returns a source over bucket, made once.
func (l *locations) source(ctx context.Context, bucket string) (*s3store.Source, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s, ok := l.sources[bucket]; ok {
		return s, nil
	}
	c, err := s3store.NewClient(ctx, bucket, l.clients)
	if err != nil {
		return nil, err
	}
	s := s3store.NewSource(c, s3store.Target{Bucket: bucket})
	l.sources[bucket] = s
	return s, nil
}
