package cmd

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/s3pd/s3pd/pkg/raid"
	"github.com/s3pd/s3pd/pkg/s3store"
)

type duOptions struct {
	// url is the argument; flags are the command's, for the settings.
	url    string
	flags  *pflag.FlagSet
	rules  ruleFlags
	asJSON bool
	// bytes and human: the size in bytes only, or in binary units only
	// (by default both).
	bytes, human bool
}

// NewCmdDu builds `s3pd du`. runF, when set, runs instead of runDu with
// the parsed options (tests).
func NewCmdDu(f *Factory, runF func(context.Context, *duOptions) error) *cobra.Command {
	opts := &duOptions{}
	c := &cobra.Command{
		Use:   "du [flags] s3://bucket[/prefix]",
		Short: "Count the objects and bytes under a prefix",
		Long: `Count the objects under a prefix and add up their sizes, as the AWS CLI's
ls --recursive --summarize does: every key that starts with the prefix as
given. A key with "*" or "?" counts only the keys that match it, and
--include/--exclude apply as in get.`,
		Example: `  s3pd du s3://my-bucket/models/
  s3pd du 's3://my-bucket/models/*.safetensors'
  s3pd du --json s3://my-bucket/`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("du takes one s3://bucket[/prefix], got %d argument(s)", len(args))
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			opts.url, opts.flags = args[0], c.Flags()
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return runDu(c.Context(), f, opts.flags, opts, opts.url)
		},
	}
	fs := c.Flags()
	addSettingsFlags(fs)
	hideTransferSettings(fs)
	acceptQuiet(fs)
	opts.rules.register(fs)
	fs.BoolVar(&opts.asJSON, "json", false, `one JSON line of type "usage" (docs/JSON.md)`)
	fs.BoolVarP(&opts.bytes, "bytes", "b", false, "the size in bytes only, without binary units")
	fs.BoolVarP(&opts.human, "human-readable", "H", false, "the size in binary units only (KiB, MiB, ...), as s5cmd's du -H")
	return c
}

// Line types of ls and du (docs/JSON.md).
const (
	lineEntry = "entry"
	lineUsage = "usage"
)

// usageLine is du's --json line, and the last of ls --json.
type usageLine struct {
	header
	URL     string `json:"url"`
	Objects int64  `json:"objects"`
	Bytes   int64  `json:"bytes"`
}

func newUsageLine(url string, u s3store.Usage) usageLine {
	return usageLine{header: newHeader(lineUsage), URL: url, Objects: u.Objects, Bytes: u.Bytes}
}

func runDu(ctx context.Context, fac *Factory, fs *pflag.FlagSet, opts *duOptions, arg string) (err error) {
	if opts.bytes && opts.human {
		return usageErrorf("--bytes and --human-readable contradict each other")
	}
	u, err := opts.rules.parseSource(arg)
	if err != nil {
		return usageError(err)
	}
	f, src, err := openSource(ctx, fac, fs, s3store.Target{Bucket: u.Bucket, Prefix: u.Key})
	defer f.end(&err)
	if err != nil {
		return err
	}
	usage, err := src.Usage(ctx, opts.rules.rules.Filter())
	if err != nil {
		return startError(ctx, err)
	}
	if opts.asJSON {
		return json.NewEncoder(f.IO.Out).Encode(newUsageLine(arg, usage))
	}
	size := fmt.Sprintf("%s (%d bytes)", raid.HumanBytes(usage.Bytes), usage.Bytes)
	switch {
	case opts.bytes:
		size = fmt.Sprint(usage.Bytes)
	case opts.human:
		size = raid.HumanBytes(usage.Bytes)
	}
	_, err = fmt.Fprintf(f.IO.Out, "%s, %s\t%s\n", plural(usage.Objects, "object"), size, arg)
	return err
}
