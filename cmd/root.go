package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

// NewCmdRoot builds the s3pd command tree.
func NewCmdRoot(f *Factory) *cobra.Command {
	root := &cobra.Command{
		Use:   "s3pd",
		Short: "Move data out of S3 as fast as the hardware allows",
		Long: `s3pd downloads from Amazon S3 and S3-compatible stores with many ranged
GETs in parallel, verified, resumable and in bounded memory.

The original s3pd's form without a subcommand, s3pd [flags] SRC DEST, runs
get when SRC is an s3:// URL, and copy when SRC is a local path.`,
		Version:       f.Version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.ErrOut)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError(err) })
	root.AddCommand(
		NewCmdGet(f),
		NewCmdCopy(f),
		NewCmdBench(f),
		NewCmdNics(f),
		NewCmdRaidSetup(f),
		NewCmdConfig(f),
		NewCmdShards(f),
	)
	return root
}

// Execute runs s3pd with args and returns the process's exit code. Every
// error becomes one line on stderr here, and nowhere else.
func Execute(ctx context.Context, io *IOStreams, version string, args []string) int {
	f := &Factory{IO: io, Version: version, Getenv: os.Getenv}
	root := NewCmdRoot(f)
	root.SetArgs(legacyArgs(root, args))
	err := root.ExecuteContext(ctx)
	for _, fn := range f.exits {
		fn()
	}
	if f.Logger != nil {
		f.Logger.Sync()
	}
	if err == nil {
		return ExitOK
	}
	if ctx.Err() != nil && !isUsage(err) {
		fmt.Fprintln(io.ErrOut, "s3pd: interrupted")
		return ExitInterrupted
	}
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Err != nil {
		fmt.Fprintln(io.ErrOut, "s3pd: "+oneLine(err.Error()))
	}
	code := exitCode(err)
	if code == ExitOK {
		code = ExitFailed
	}
	if isUnknownCommand(err) {
		code = ExitUsage
	}
	return code
}

func isUsage(err error) bool { return exitCode(err) == ExitUsage }

func isUnknownCommand(err error) bool {
	s := err.Error()
	return strings.HasPrefix(s, "unknown command") || strings.HasPrefix(s, "unknown flag") ||
		strings.Contains(s, "accepts") && strings.Contains(s, "arg(s)")
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// legacyArgs maps the original s3pd's form without a subcommand,
// `s3pd [flags] SRC DEST`, onto `s3pd get`.
func legacyArgs(root *cobra.Command, args []string) []string {
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			if c, _, err := root.Find([]string{a}); err == nil && c != root {
				return args // a subcommand is named
			}
			break
		}
	}
	for _, a := range args {
		if a == "-h" || a == "--help" || a == "--version" {
			return args
		}
	}
	var positional []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case strings.HasPrefix(a, "s3://"):
			return append([]string{"get"}, args...)
		case strings.HasPrefix(a, "-"):
			if !strings.Contains(a, "=") && i+1 < len(args) && !boolFlag(root, a) {
				i++ // the flag's value
			}
		default:
			positional = append(positional, a)
		}
	}
	if len(positional) == 2 {
		return append([]string{"copy"}, args...)
	}
	return args
}

// boolFlag reports whether flag (as written, "--name" or "-n") is a
// boolean flag of get or copy, which takes no separate value.
func boolFlag(root *cobra.Command, flag string) bool {
	name := strings.TrimLeft(flag, "-")
	for _, sub := range []string{"get", "copy"} {
		c, _, err := root.Find([]string{sub})
		if err != nil {
			continue
		}
		fl := c.Flags().Lookup(name)
		if fl == nil && len(name) == 1 {
			fl = c.Flags().ShorthandLookup(name)
		}
		if fl != nil {
			return fl.Value.Type() == "bool"
		}
	}
	return false
}
