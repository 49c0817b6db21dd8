package cmd

import (
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/s3pd/s3pd/pkg/shard"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// scaleFlags are --shard and --manifest, shared by get and copy.
type scaleFlags struct {
	shard string
}

func (s *scaleFlags) register(fs *pflag.FlagSet) {
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
	lister transfer.Lister // nil: the first lane's source
	report *shard.Report   // nil without --shard
}

// split makes run list shard spec of what it lists so far (inner).
func (r *scaleRun) split(inner transfer.Lister, spec *shard.Spec, rules transfer.Rules) {
	if spec == nil {
		return
	}
	if r.lister != nil {
		inner = r.lister
	}
	r.lister, r.report = shard.Split(inner, *spec, shard.Options{Filter: rules.Filter()})
}

// printShard writes the human line about the shard.
func printShard(w io.Writer, r *shard.Report) {
	fmt.Fprintf(w, "shard %s: %d objects, %d bytes (%.1f%% of %d objects, %d bytes), keys %q to %q, listing %s\n",
		r.Shard, r.Objects, r.Bytes, r.Share*100, r.ListingObjects, r.ListingBytes, r.FirstKey, r.LastKey, r.ListingHash)
}
