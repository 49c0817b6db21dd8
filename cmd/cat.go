package cmd

import (
	"context"
	"time"

	"github.com/spf13/cobra"
)

// NewCmdCat builds `s3pd cat`: get of one object to stdout, with nothing
// else on stdout and only errors and warnings on stderr. runF, when set,
// runs instead of runGet with the parsed options (tests).
func NewCmdCat(f *Factory, runF func(context.Context, *getOptions) error) *cobra.Command {
	opts := &getOptions{}
	c := &cobra.Command{
		Use:   "cat [flags] s3://bucket/key",
		Short: "Write one object to stdout",
		Long: `Write one object to stdout, in order, with parts fetched in parallel and
the object's checksum verified, as get s3://bucket/key - does. Nothing
else is written to stdout; stderr has errors and warnings only. The key is
taken literally ("*" and "?" are not wildcards).`,
		Example: `  s3pd cat s3://my-bucket/config.json
  s3pd cat s3://my-bucket/x.tar | tar x`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("cat takes one s3://bucket/key, got %d argument(s)", len(args))
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			opts.src, opts.dest, opts.flags = args[0], "-", c.Flags()
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return runGet(c.Context(), f, opts)
		},
	}
	opts.output.quiet, opts.output.onlyErrors = true, true
	opts.output.stall = 30 * time.Second
	opts.rules.raw = true
	opts.scale.fanOut = 1 // one object: no listing to fan out
	fs := c.Flags()
	addSettingsFlags(fs)
	acceptQuiet(fs)
	fs.StringVar(&opts.output.verify, "verify", "auto", "what to verify: auto, full, require or off (as get)")
	fs.StringVar(&opts.versionID, "version-id", "", "version of the object")
	fs.StringVar(&opts.req.RequestPayer, "request-payer", "", `confirm that the requester pays ("requester")`)
	fs.StringVar(&opts.req.ExpectedBucketOwner, "expected-bucket-owner", "", "account ID the bucket must belong to")
	opts.ssec.register(fs)
	return c
}
