package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/s3pd/s3pd/pkg/s3store"
)

type lsOptions struct {
	// url is the argument ("": list the buckets).
	url string
	// flags are the command's flags, for the settings they set.
	flags                               *pflag.FlagSet
	recursive, human, summarize, asJSON bool
}

// NewCmdLs builds `s3pd ls`. runF, when set, runs instead of runLs with
// the parsed options (tests).
func NewCmdLs(f *Factory, runF func(context.Context, *lsOptions) error) *cobra.Command {
	opts := &lsOptions{}
	c := &cobra.Command{
		Use:   "ls [flags] [s3://bucket[/prefix]]",
		Short: "List objects and prefixes, as the AWS CLI's ls",
		Long: `List the objects and common prefixes (PRE) directly under a prefix, or with
--recursive every object under it, in key order, in the AWS CLI's format.
As there, the prefix is matched as given: s3://b/p lists p/ and p.txt.
Without a URL, ls lists the buckets the credentials own.`,
		Example: `  s3pd ls
  s3pd ls s3://my-bucket/models/
  s3pd ls --recursive --human-readable --summarize s3://my-bucket/models/
  s3pd ls --json s3://my-bucket/models/`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageErrorf("ls takes at most one s3://bucket[/prefix], got %d", len(args))
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			opts.url, opts.flags = "", c.Flags()
			if len(args) == 1 {
				opts.url = args[0]
			}
			switch {
			case runF != nil:
				return runF(c.Context(), opts)
			case opts.url == "":
				return runLsBuckets(c.Context(), f, opts.flags, opts)
			}
			return runLs(c.Context(), f, opts.flags, opts, opts.url)
		},
	}
	fs := c.Flags()
	addSettingsFlags(fs)
	hideTransferSettings(fs)
	acceptQuiet(fs)
	fs.BoolVarP(&opts.recursive, "recursive", "r", false, "list every object under the prefix, with full keys")
	fs.BoolVarP(&opts.human, "human-readable", "H", false, "sizes in binary units (KiB, MiB, ...)")
	fs.BoolVar(&opts.summarize, "summarize", false, "end with the number of objects and their total size")
	fs.BoolVar(&opts.asJSON, "json", false, `one JSON line per object or prefix ("entry"), then a "usage" line (docs/JSON.md)`)
	return c
}

// entryLine is one --json line of ls per object or prefix
// (docs/JSON.md).
type entryLine struct {
	header
	Kind         string     `json:"kind"` // object or prefix
	Key          string     `json:"key"`
	Size         *int64     `json:"size,omitempty"`
	Modified     *time.Time `json:"modified,omitempty"`
	StorageClass string     `json:"storage_class,omitempty"`
}

func runLs(ctx context.Context, fac *Factory, fs *pflag.FlagSet, opts *lsOptions, arg string) (err error) {
	u, err := s3store.ParseRawURL(arg)
	if err != nil {
		return usageError(err)
	}
	f, src, err := openSource(ctx, fac, fs, s3store.Target{Bucket: u.Bucket})
	defer f.end(&err)
	if err != nil {
		return err
	}
	out := f.IO.Out
	enc := json.NewEncoder(out)
	// Without --recursive, names are shown relative to the prefix's
	// directory, as the AWS CLI shows them.
	dir := ""
	if !opts.recursive {
		dir = u.Key[:strings.LastIndexByte(u.Key, '/')+1]
	}
	var total s3store.Usage
	entries := 0
	// As the AWS CLI, each page's PRE lines come before its objects: the
	// objects are held a page (lsPage) at a time.
	var held []s3store.Entry
	flush := func() error {
		for _, e := range held {
			if err := printLsEntry(out, e, strings.TrimPrefix(e.Key, dir), opts.human); err != nil {
				return err
			}
		}
		held = held[:0]
		return nil
	}
	err = src.ListDir(ctx, u.Key, opts.recursive, func(e s3store.Entry) error {
		entries++
		if !e.Dir {
			total.Objects++
			total.Bytes += e.Size
		}
		switch {
		case opts.asJSON:
			return enc.Encode(lsEntryLine(e))
		case e.Dir:
			return printLsEntry(out, e, strings.TrimPrefix(e.Key, dir), opts.human)
		}
		if held = append(held, e); len(held) >= lsPage {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return startError(ctx, err)
	}
	if entries == 0 && u.Key != "" {
		// As the AWS CLI and s5cmd: a key that lists nothing is an
		// error a script sees, not an empty success.
		return &ExitError{Code: ExitFailed, Err: fmt.Errorf("%s: no such key: no object or prefix starts with %s", arg, printable(u.Key))}
	}
	switch {
	case opts.asJSON:
		return enc.Encode(newUsageLine(arg, total))
	case opts.summarize:
		fmt.Fprintf(out, "\nTotal Objects: %d\n   Total Size: %s\n", total.Objects, sizeText(total.Bytes, opts.human))
	}
	return nil
}

func lsEntryLine(e s3store.Entry) entryLine {
	if e.Dir {
		return entryLine{header: newHeader(lineEntry), Kind: "prefix", Key: e.Key}
	}
	mod, size := e.ModTime.UTC(), e.Size
	return entryLine{header: newHeader(lineEntry), Kind: "object", Key: e.Key, Size: &size, Modified: &mod, StorageClass: e.StorageClass}
}

// printLsEntry writes one line in the AWS CLI's layout.
func printLsEntry(w io.Writer, e s3store.Entry, name string, human bool) error {
	var err error
	if e.Dir {
		_, err = fmt.Fprintf(w, "%26s PRE %s\n", "", printable(name))
	} else {
		_, err = fmt.Fprintf(w, "%s %10s %s\n", e.ModTime.Local().Format("2006-01-02 15:04:05"), sizeText(e.Size, human), printable(name))
	}
	return err
}

// lsPage is how many objects ls holds back so that the PRE lines
// among them come first: a page of S3's listing.
const lsPage = 1000

// sizeText is n in bytes, or, when human, as the AWS CLI writes it:
// "1 Byte", "3 Bytes", "1.5 KiB", "1.0 MiB".
func sizeText(n int64, human bool) string {
	if !human {
		return fmt.Sprint(n)
	}
	switch {
	case n == 1:
		return "1 Byte"
	case n < 1024:
		return fmt.Sprintf("%d Bytes", n)
	}
	v := float64(n)
	for _, unit := range []string{"KiB", "MiB", "GiB", "TiB", "PiB"} {
		if v /= 1024; math.Round(v) < 1024 { // the AWS CLI's rule
			return fmt.Sprintf("%.1f %s", v, unit)
		}
	}
	return fmt.Sprintf("%.1f EiB", v/1024)
}

// runLsBuckets lists the buckets, as the AWS CLI's ls without a URL.
func runLsBuckets(ctx context.Context, fac *Factory, fs *pflag.FlagSet, opts *lsOptions) (err error) {
	f, src, err := openSource(ctx, fac, fs, s3store.Target{})
	defer f.end(&err)
	if err != nil {
		return err
	}
	buckets, err := src.Buckets(ctx)
	if err != nil {
		return startError(ctx, err)
	}
	enc := json.NewEncoder(f.IO.Out)
	for _, b := range buckets {
		if opts.asJSON {
			mod := b.ModTime.UTC()
			err = enc.Encode(entryLine{header: newHeader(lineEntry), Kind: "bucket", Key: b.Key, Modified: &mod})
		} else {
			_, err = fmt.Fprintf(f.IO.Out, "%s %s\n", b.ModTime.Local().Format("2006-01-02 15:04:05"), b.Key)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
