package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/spf13/pflag"

	"github.com/s3pd/s3pd/pkg/config"
	"github.com/s3pd/s3pd/pkg/manifest"
	"github.com/s3pd/s3pd/pkg/s3store"
	"github.com/s3pd/s3pd/pkg/shard"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// defaultFanOut is how many sub-prefixes are listed at once.
const defaultFanOut = 16

// scaleFlags are --shard and --manifest, shared by get and copy.
type scaleFlags struct {
	shard    string
	manifest string
	fanOut   int
}

func (s *scaleFlags) register(fs *pflag.FlagSet) {
	fs.IntVar(&s.fanOut, "list-concurrency", defaultFanOut, "list up to this many sub-prefixes of the prefix at once (1: one listing stream)")
	fs.StringVar(&s.manifest, "manifest", "", `list the objects from FILE instead of ListObjectsV2: "-" (stdin), a local path or an s3:// URL; a text manifest (one s3://BUCKET/KEY or KEY per line, optionally a tab and the size) or an S3 Inventory's manifest.json`)
	fs.StringVar(&s.shard, "shard", "", `take shard K/N of the objects (0 <= K < N), split by bytes; "auto" reads K and N from a Kubernetes Indexed Job (JOB_COMPLETION_INDEX, S3PD_SHARD_COUNT) or a Slurm job array (SLURM_ARRAY_TASK_*)`)
}

// spec parses --shard; nil without it.
func (s *scaleFlags) spec(getenv func(string) string) (*shard.Spec, error) {
	var (
		sp  shard.Spec
		err error
	)
	switch s.shard {
	case "":
		return nil, nil
	case "auto":
		sp, err = shard.FromEnv(getenv)
	default:
		sp, err = shard.Parse(s.shard)
		if err != nil {
			err = fmt.Errorf("--%w", err)
		}
	}
	if err != nil {
		return nil, usageError(err)
	}
	return &sp, nil
}

// scaleRun is what --shard and --manifest change in one run: what lists
// the objects, and the shard's report for the summary.
type scaleRun struct {
	lister   transfer.Lister   // nil: the first lane's source
	report   *shard.Report     // nil without --shard
	manifest *manifest.Options // nil without --manifest
}

// split makes run list shard spec of what it lists so far (inner). A
// manifest is split as written, its entries without a size unresolved,
// so that every node computes the same split whatever its lookups
// return; only the shard's own entries are looked up, after the split.
func (r *scaleRun) split(inner transfer.Lister, spec *shard.Spec, rules transfer.Rules) {
	if spec == nil {
		return
	}
	if r.lister != nil {
		inner = r.lister
	}
	if r.manifest != nil {
		opts := *r.manifest
		opts.Unresolved = true
		inner = manifest.New(opts)
	}
	r.lister, r.report = shard.Split(inner, *spec, shard.Options{Filter: rules.Filter()})
	if r.manifest != nil {
		r.lister = manifest.Resolve(r.lister, r.manifest.Stat, r.manifest.Lookups)
	}
}

// printShard writes the human line about the shard.
func printShard(w io.Writer, r *shard.Report) {
	fmt.Fprintf(w, "shard %s: %d objects, %d bytes (%.1f%% of %d objects, %d bytes), keys %q to %q, listing %s\n",
		r.Shard, r.Objects, r.Bytes, r.Share*100, r.ListingObjects, r.ListingBytes, r.FirstKey, r.LastKey, r.ListingHash)
}

// readManifest makes run list the objects of --manifest, under bucket
// and prefix, looking objects up through src.
func (r *scaleRun) readManifest(f *Factory, settings config.Settings, location, bucket, prefix string, src *s3store.Source) {
	loc := &locations{in: f.IO.In, settings: settings, sources: map[string]*s3store.Source{bucket: src}}
	r.manifest = &manifest.Options{Location: location, Bucket: bucket, Prefix: prefix, Open: loc.open, Stat: src.Stat}
	r.lister = manifest.New(*r.manifest)
}

// manifestPrefix is the prefix a --manifest run's URL names: with a
// manifest, s3://b/p always means the prefix p/.
func manifestPrefix(key string) string {
	if key != "" && !strings.HasSuffix(key, "/") {
		key += "/"
	}
	return key
}

// locations opens what a manifest names: stdin, local files, objects
// in any bucket of the same endpoint.
type locations struct {
	in       io.Reader
	settings config.Settings
	mu       sync.Mutex
	sources  map[string]*s3store.Source
}

func (l *locations) open(ctx context.Context, loc string) (io.ReadCloser, error) {
	switch {
	case loc == "-":
		return io.NopCloser(l.in), nil
	case strings.HasPrefix(loc, "s3://"):
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
	c, err := s3store.NewClient(ctx, bucket, s3store.ClientOptions{Region: l.settings.Region, EndpointURL: l.settings.EndpointURL, AddressingStyle: l.settings.AddressingStyle,
		Profile: l.settings.Profile, NoSignRequest: l.settings.NoSignRequest, Conns: 4})
	if err != nil {
		return nil, err
	}
	s := s3store.NewSource(c, s3store.Target{Bucket: bucket})
	l.sources[bucket] = s
	return s, nil
}

// badManifest turns a bad manifest entry into a usage error (exit 2).
func badManifest(err error) error {
	var le *manifest.LineError
	if errors.As(err, &le) {
		return usageError(err)
	}
	return err
}

// shardLockID is the destination lock identity of a shard ("" for none):
// shards of one DEST run together, a second run of the same shard or a
// run over all keys is refused.
func shardLockID(spec *shard.Spec) string {
	if spec == nil {
		return ""
	}
	return fmt.Sprintf("%dof%d", spec.K, spec.N)
}
