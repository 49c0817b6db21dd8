package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/s3pd/s3pd/pkg/s3store"
)

// NewCmdRoot builds the s3pd command tree.
func NewCmdRoot(f *Factory) *cobra.Command {
	root := &cobra.Command{
		Use:   "s3pd",
		Short: "Move data out of S3 as fast as the hardware allows",
		Long: `s3pd downloads from Amazon S3 and S3-compatible stores with many ranged
GETs in parallel, verified, resumable and in bounded memory.

The original s3pd's form without a subcommand, s3pd [flags] s3://SRC DEST,
runs get. A local SRC needs a command: s3pd copy SRC DEST.`,
		Version:       f.Version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.ErrOut)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageError(suggestFlag(c, err)) })
	root.AddCommand(
		NewCmdGet(f, nil),
		NewCmdCopy(f, nil),
		NewCmdBench(f, nil),
		NewCmdNics(f, nil),
		NewCmdRaidSetup(f),
		NewCmdConfig(f, nil),
		NewCmdShards(f, nil),
		NewCmdLs(f, nil),
		NewCmdDu(f, nil),
		NewCmdCat(f, nil),
		NewCmdMan(f),
	)
	addExamples(root)
	registerCompletions(root, enumFlags(f))
	refuseUnknownSubcommands(root)
	return root
}

// Execute runs s3pd with args and returns the process's exit code. Every
// error becomes one line on stderr here, and nowhere else.
func Execute(ctx context.Context, io *IOStreams, version string, args []string) int {
	f := &Factory{IO: io, Version: resolveVersion(version, debug.ReadBuildInfo), Getenv: os.Getenv}
	root := NewCmdRoot(f)
	// cobra adds help and completion when it runs; add them now, so the
	// no-subcommand form sees their names.
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	if c, _, err := root.Find([]string{"completion"}); err == nil && c != root {
		// An unknown shell is an error, not cobra's help and exit 0.
		c.RunE = func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return c.Help()
			}
			return usageErrorf("completion %q: want bash, zsh, fish or powershell", args[0])
		}
	}
	args = legacyArgs(root, sseCValue(args))
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if isUnknownCommand(err) {
		err = explainUnknownCommand(root, args, err)
	}
	if swallowed := swallowedURL(root, args); swallowed != nil && isUsage(err) && strings.Contains(err.Error(), "argument(s)") {
		err = swallowed
	}
	env := newRunEnv(f) // a run that failed before it started its own
	if re := (*runError)(nil); errors.As(err, &re) {
		env = re.env
		defer env.runExits() // after the error line, which goes with the JSON lines
	}
	if err == nil {
		return ExitOK
	}
	code := exitCode(err)
	if code == ExitOK {
		code = ExitFailed
	}
	if isUnknownCommand(err) {
		code = ExitUsage
	}
	if code == ExitInterrupted {
		code = interruptedCode(ctx)
	}
	msg := oneLine(err.Error())
	var ce *s3store.CertificateError
	var ne *s3store.EndpointError
	var ia *includeAloneError
	switch {
	case errors.As(err, &ia):
		msg = ia.explain(args)
	case ctx.Err() == nil && errors.As(err, &ce):
		// What to do, without the SDK's chain around it; an endpoint
		// that cannot be reached is exit 1 in every command.
		code, msg = ExitFailed, ce.Error()
	case ctx.Err() == nil && errors.As(err, &ne):
		code, msg = ExitFailed, ne.Error()
	case ctx.Err() != nil && !isUsage(err):
		code, msg = interruptedCode(ctx), "interrupted"
	case s3store.NoCredentials(err):
		msg = credentialsMessage(f.Getenv, args, err)
	}
	var ee *ExitError
	var s said
	quiet := errors.As(err, &ee) && ee.Err == nil && code != ExitInterrupted && code != ExitTerminated || // the run said why
		errors.As(err, &s)
	reportError(env, args, err, msg, code, quiet)
	return code
}

// reportError writes the one line of an error on stderr (a JSON line
// under --log-format json) and, under --json, an error line with the
// other JSON lines.
func reportError(f *runEnv, args []string, err error, msg string, code int, quiet bool) {
	ecode, status := errorCode(err)
	if code == ExitInterrupted || code == ExitTerminated {
		ecode = codeInterrupted
	}
	if f.JSON != nil || hasFlag(args, "json") {
		w := f.JSON
		if w == nil {
			w = f.IO.Out
		}
		writeJSONLine(w, errorLine{header: newHeader(lineError), Error: msg, ErrorCode: ecode, HTTPStatus: status, ExitCode: code})
	}
	if quiet {
		return
	}
	if f.LogJSON || flagValue(args, "log-format") == "json" || f.Getenv("S3PD_LOG_FORMAT") == "json" {
		writeJSONLine(f.IO.ErrOut, map[string]any{"level": "error", "ts": time.Now().UTC().Format("2006-01-02T15:04:05.000Z0700"),
			"msg": msg, "error_code": ecode, "exit_code": code})
		return
	}
	fmt.Fprintln(f.IO.ErrOut, "s3pd: "+msg)
}

// hasFlag reports whether args set the boolean flag --name (before "--").
func hasFlag(args []string, name string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "--" + name, "--" + name + "=true":
			return true
		}
	}
	return false
}

// flagValue returns the value args give --name ("" when none).
func flagValue(args []string, name string) string {
	for i, a := range args {
		if a == "--" {
			break
		}
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v
		}
		if a == "--"+name && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// swallowedURL is the error of a flag that took an s3:// URL as its
// value (--region s3://b/p/ DEST, the region forgotten): the command
// then counts one argument short. nil when no flag did.
func swallowedURL(root *cobra.Command, args []string) error {
	c, _, err := root.Find(args)
	if err != nil {
		return nil
	}
	for i := 0; i+1 < len(args); i++ {
		name, ok := strings.CutPrefix(args[i], "--")
		if args[i] == "--" {
			return nil
		}
		if !ok || strings.Contains(name, "=") || !strings.HasPrefix(args[i+1], "s3://") {
			continue
		}
		if fl := c.Flags().Lookup(name); fl != nil && fl.Value.Type() != "bool" && fl.NoOptDefVal == "" {
			return usageErrorf("--%s took %s as its value: give --%s a value of its own before the URL", name, args[i+1], name)
		}
	}
	return nil
}

func isUsage(err error) bool { return exitCode(err) == ExitUsage }

func isUnknownCommand(err error) bool {
	if err == nil {
		return false
	}
	s := err.Error()
	return strings.HasPrefix(s, "unknown command") || strings.HasPrefix(s, "unknown flag") ||
		strings.Contains(s, "accepts") && strings.Contains(s, "arg(s)")
}

// oneLine makes a message one printable line: runs of white space
// become one space, other control and hidden characters are escaped
// (printableText).
func oneLine(s string) string {
	return printableText(strings.Join(strings.Fields(s), " "))
}

// legacyArgs maps the original s3pd's form without a subcommand,
// `s3pd [flags] s3://bucket/prefix DEST`, onto `s3pd get`. It applies
// only when the first word is an s3:// URL, so it never shadows a command,
// an alias or cobra's own (help, completion, __complete), and a local
// source needs `s3pd copy`.
func legacyArgs(root *cobra.Command, args []string) []string {
	for _, a := range args {
		if a == "-h" || a == "--help" || a == "--version" {
			return args
		}
	}
	if words := positionals(root, args); len(words) > 0 && strings.HasPrefix(words[0], "s3://") {
		return append([]string{"get"}, args...)
	}
	return args
}

// sseCValue joins the AWS CLI's `--sse-c AES256` into `--sse-c=AES256`:
// the flag's value is optional (AES256 when absent), so a value in the
// next word would read as an argument. Only an algorithm's spelling is
// joined (AES256, or a word with ":" like aws:kms, which is then
// refused by name), never a URL or a path.
func sseCValue(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		if a == "--sse-c" && i+1 < len(args) {
			next := args[i+1]
			if strings.EqualFold(next, "AES256") || strings.Contains(next, ":") && !strings.ContainsAny(next, "/.") {
				out = append(out, a+"="+next)
				i++
				continue
			}
		}
		out = append(out, a)
	}
	return out
}

// positionals returns the words of args that are neither flags nor the
// values of get's and copy's flags.
func positionals(root *cobra.Command, args []string) []string {
	var words []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return append(words, args[i+1:]...)
		case strings.HasPrefix(a, "-") && a != "-":
			if !strings.Contains(a, "=") && i+1 < len(args) && !boolFlag(root, a) {
				i++ // the flag's value
			}
		default:
			words = append(words, a)
		}
	}
	return words
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
