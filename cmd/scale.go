package cmd

import (
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/s3pd/s3pd/internal/job"
	"github.com/s3pd/s3pd/pkg/config"
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

// printShard writes the human line about the shard.
func printShard(w io.Writer, r *shard.Report) {
	fmt.Fprintf(w, "shard %s: %s, %s (%.1f%% of %s, %s), objects %s of listing %s\n",
		r.Shard, plural(r.Objects, "object"), plural(r.Bytes, "byte"), r.Share*100, plural(r.ListingObjects, "object"), plural(r.ListingBytes, "byte"), r.Hash, r.ListingHash)
}

// badManifest turns a bad manifest entry into a usage error (exit 2).
func badManifest(err error) error {
	if job.BadManifest(err) {
		return usageError(err)
	}
	return err
}

// scaleSpec is what --manifest and --shard (spec, nil without it) ask
// of the run; a manifest in S3 is read with the run's settings, over the
// run's transport t.
func (s *scaleFlags) scaleSpec(f *runEnv, settings config.Settings, t *s3store.Transport, spec *shard.Spec, rules transfer.Rules) job.ScaleSpec {
	return job.ScaleSpec{Manifest: s.manifest, Stdin: f.IO.In, Shard: spec, Filter: rules.Filter(),
		Stores: s3Stores(clientOptions(f, settings, t), s3store.Request{})}
}
