package cmd

import (
	"context"

	"github.com/spf13/pflag"

	"github.com/s3pd/s3pd/internal/job"
)

// openSource starts the run of a command that reads a bucket without
// transferring (ls, du) and returns its environment (never nil) and a
// source over the bucket, built as get builds its first lane.
func openSource(ctx context.Context, fac *Factory, fs *pflag.FlagSet, t job.Target) (f *runEnv, src *job.Bucket, err error) {
	f, settings, _, err := startRun(fac, fs, nil, false)
	if err != nil {
		return f, nil, err
	}
	if t.Bucket == "" && settings.Region == "" {
		settings.Region = "us-east-1" // listing buckets: no bucket to ask
	}
	c, err := s3Client(ctx, f, settings)
	if err != nil {
		return f, nil, startError(ctx, err)
	}
	t.OnRetry = f.logListRetry
	b, err := job.Browse(ctx, c, t)
	if err != nil {
		return f, nil, startError(ctx, err)
	}
	return f, b, nil
}

// acceptQuiet registers get's --quiet and --no-progress on a command
// that never shows a progress bar, hidden, so that scripts can pass the
// same flags to all.
func acceptQuiet(fs *pflag.FlagSet) {
	fs.BoolP("quiet", "q", false, "no progress bar (this command never shows one)")
	fs.Bool("no-progress", false, "no progress bar (this command never shows one)")
	for _, name := range []string{"quiet", "no-progress"} {
		if err := fs.MarkHidden(name); err != nil {
			panic(err) // registered just above
		}
	}
}
