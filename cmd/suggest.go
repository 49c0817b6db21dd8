package cmd

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/s3pd/s3pd/pkg/config"
)

// explainUnknownCommand turns cobra's "unknown command" into one line
// that says what to run instead.
func explainUnknownCommand(root *cobra.Command, args []string, err error) error {
	if !strings.HasPrefix(err.Error(), "unknown command") {
		return err
	}
	words := positionals(root, args)
	if len(words) == 0 || !strings.HasPrefix(err.Error(), fmt.Sprintf("unknown command %q for %q", words[0], root.Name())) {
		return err
	}
	word := words[0]
	if msg, ok := otherToolsCommand(word, words[1:]); ok {
		return usageError(errors.New(msg))
	}
	switch {
	case len(root.SuggestionsFor(word)) > 0:
		return usageErrorf("unknown command %q: did you mean %s?", word, strings.Join(root.SuggestionsFor(word), " or "))
	case len(words) == 2:
		return usageErrorf(`unknown command %q: without a command s3pd takes the original s3pd's form "s3pd [flags] s3://bucket/prefix DEST"; use "s3pd copy SRC DEST" for local paths`, word)
	}
	return usageErrorf(`unknown command %q: "s3pd --help" lists the commands`, word)
}

// otherToolsFlags are flags of s5cmd, rclone and hf download that s3pd
// spells otherwise, with what to write instead.
var otherToolsFlags = map[string]string{
	"concurrency":           "--max-concurrent-requests, the requests in flight in all (s5cmd's --concurrency is parts in flight per file; s3pd shares one budget)",
	"numworkers":            "--workers, the objects open at once (s5cmd's --numworkers)",
	"transfers":             "--workers, the objects open at once (rclone's --transfers)",
	"multi-thread-streams":  "--threads, the ranges in flight of one object (rclone's --multi-thread-streams)",
	"s3-chunk-size":         "--partsize (rclone's --s3-chunk-size)",
	"s3-upload-concurrency": "--max-concurrent-requests (rclone's --s3-upload-concurrency)",
	"local-dir":             "DEST, the second argument: s3pd get s3://BUCKET/PREFIX/ DIR (hf download's --local-dir)",
	"max-workers":           "--workers (hf download's --max-workers)",
}

// suggestFlag adds "did you mean --x?" to pflag's unknown-flag error when
// a flag of c is spelled closely, and what to write for another tool's
// flag.
func suggestFlag(c *cobra.Command, err error) error {
	const prefix = "unknown flag: --"
	msg := err.Error()
	if !strings.HasPrefix(msg, prefix) {
		return err
	}
	name := strings.TrimPrefix(msg, prefix)
	if instead, ok := otherToolsFlags[name]; ok && c.Flags().Lookup("workers") != nil {
		return fmt.Errorf("%w: s3pd writes %s", err, instead)
	}
	best, dist := "", 3
	c.Flags().VisitAll(func(fl *pflag.Flag) {
		if fl.Hidden {
			return
		}
		d := config.EditDistance(name, fl.Name)
		if strings.HasPrefix(fl.Name, name) && len(name) >= 3 {
			d = min(d, 1)
		}
		if d < dist {
			best, dist = fl.Name, d
		}
	})
	if best == "" {
		return err
	}
	return fmt.Errorf("%w: did you mean --%s?", err, best)
}

// refuseUnknownSubcommands makes every command under c that only groups
// others (config, shards) refuse a word that is none of them: cobra
// would print the help and exit 0. Without a word it still prints its
// help.
func refuseUnknownSubcommands(c *cobra.Command) {
	for _, sub := range c.Commands() {
		refuseUnknownSubcommands(sub)
	}
	if !c.HasParent() || !c.HasSubCommands() || c.Runnable() {
		return
	}
	c.Args = cobra.ArbitraryArgs
	c.RunE = func(c *cobra.Command, args []string) error {
		if len(args) == 0 {
			return c.Help()
		}
		if s := c.SuggestionsFor(args[0]); len(s) > 0 {
			return usageErrorf("unknown command %q for %q: did you mean %q?", args[0], c.CommandPath(), c.CommandPath()+" "+s[0])
		}
		return usageErrorf("unknown command %q for %q: %q lists its commands", args[0], c.CommandPath(), c.CommandPath()+" --help")
	}
}

// cmpOr is s unless it is the placeholder, else what.
func cmpOr(s, what, placeholder string) string {
	if s == placeholder {
		return what
	}
	return s
}

// otherToolsCommand says what to run instead of a command of the AWS
// CLI, s5cmd or rclone that s3pd does not have, given its arguments:
// edit distance would offer "du or ls" for mv.
func otherToolsCommand(word string, args []string) (string, bool) {
	src, dest := "SRC", "DEST"
	if len(args) == 2 {
		src, dest = args[0], args[1]
	}
	switch word {
	case "sync":
		// As aws s3 sync, the like-for-like command deletes nothing;
		// --delete is named as the choice it is.
		if strings.HasPrefix(src, "s3://") && !strings.HasPrefix(dest, "s3://") {
			return fmt.Sprintf(`s3pd has no sync command: "s3pd get %s %s" fetches what is new or changed and skips what DEST already has, as aws s3 sync does; add --delete to also remove files whose keys are gone`, src, dest), true
		}
		return fmt.Sprintf(`s3pd has no sync command: "s3pd copy %s %s" copies what is new or changed and skips what DEST already has, as aws s3 sync does; add --delete to also remove from DEST what SRC no longer has`, src, dest), true
	case "download", "pull", "fetch":
		return fmt.Sprintf(`s3pd has no %s command: "s3pd get %s %s" downloads an object or a prefix (for only some files: --exclude '*' --include PATTERN, or a pattern in the key)`, word, cmpOr(src, "s3://BUCKET/PREFIX/", "SRC"), dest), true
	case "upload", "push":
		return fmt.Sprintf(`s3pd has no %s command: "s3pd copy %s %s" uploads a file or a directory`, word, src, cmpOr(dest, "s3://BUCKET/PREFIX/", "DEST")), true
	case "version":
		return `s3pd has no version command: "s3pd --version" prints it`, true
	case "presign":
		return `s3pd has no presign command: "aws s3 presign s3://BUCKET/KEY" makes a presigned URL, which s3pd get does not need`, true
	case "mb", "rb":
		return fmt.Sprintf("s3pd has no %s command: it reads and copies objects and neither makes nor removes buckets (aws s3 %s does)", word, word), true
	case "mv", "move", "moveto":
		return fmt.Sprintf(`s3pd has no mv command: "s3pd copy %s %s" copies; s3pd never deletes a source, so remove it yourself once the copy succeeded`, src, dest), true
	case "rm", "delete":
		return fmt.Sprintf("s3pd has no %s command: it reads and copies, and deletes only under DEST with copy --delete or get --delete", word), true
	}
	return "", false
}
