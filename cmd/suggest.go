package cmd

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
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

// suggestFlag adds "did you mean --x?" to pflag's unknown-flag error when
// a flag of c is spelled closely.
func suggestFlag(c *cobra.Command, err error) error {
	const prefix = "unknown flag: --"
	msg := err.Error()
	if !strings.HasPrefix(msg, prefix) {
		return err
	}
	name := strings.TrimPrefix(msg, prefix)
	best, dist := "", 3
	c.Flags().VisitAll(func(fl *pflag.Flag) {
		if fl.Hidden {
			return
		}
		d := editDistance(name, fl.Name)
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

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
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
		if strings.HasPrefix(src, "s3://") && !strings.HasPrefix(dest, "s3://") {
			return fmt.Sprintf(`s3pd has no sync command: "s3pd get --delete %s %s" mirrors a prefix into a directory (new and changed objects fetched, files whose keys are gone removed)`, src, dest), true
		}
		return fmt.Sprintf(`s3pd has no sync command: "s3pd copy --delete %s %s" mirrors SRC into DEST (new and changed files copied, what SRC no longer has removed from DEST)`, src, dest), true
	case "mv", "move", "moveto":
		return fmt.Sprintf(`s3pd has no mv command: "s3pd copy %s %s" copies; s3pd never deletes a source, so remove it yourself once the copy succeeded`, src, dest), true
	case "rm", "delete", "rb", "mb":
		return fmt.Sprintf("s3pd has no %s command: it reads and copies, and deletes only under DEST with copy --delete or get --delete", word), true
	}
	return "", false
}
