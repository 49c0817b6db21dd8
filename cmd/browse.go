package cmd

import (
	"context"

	"github.com/spf13/pflag"

	"github.com/s3pd/s3pd/pkg/s3store"
)

// openSource resolves the settings of a command that reads a bucket
// without transferring (ls, du) and returns a source over it, built as
// get builds its first lane.
func openSource(ctx context.Context, f *runEnv, fs *pflag.FlagSet, tls s3store.TLS, t s3store.Target) (*s3store.Source, error) {
	settings, _, err := loadSettings(f.Factory, fs)
	if err != nil {
		return nil, err
	}
	if err := f.startLogger(settings, nil); err != nil {
		return nil, err
	}
	if t.Bucket == "" && settings.Region == "" {
		settings.Region = "us-east-1" // listing buckets: no bucket to ask
	}
	lanes, err := newS3Lanes(ctx, f, settings, tls, t.Bucket)
	if err != nil {
		return nil, startError(ctx, err)
	}
	t.OnRetry = f.logListRetry
	return lanes[0].Base.With(t), nil
}

// acceptQuiet registers get's --quiet on a command that never shows a
// progress bar, hidden, so that scripts can pass the same flags to all.
func acceptQuiet(fs *pflag.FlagSet) {
	fs.BoolP("quiet", "q", false, "no progress bar (this command never shows one)")
	if err := fs.MarkHidden("quiet"); err != nil {
		panic(err) // registered just above
	}
}
