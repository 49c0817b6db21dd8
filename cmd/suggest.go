package cmd

import (
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
	switch {
	case word == "sync":
		return usageErrorf(`s3pd has no sync command: "s3pd get --delete s3://bucket/prefix/ DIR" mirrors a prefix into DIR (new and changed objects fetched, files whose keys are gone removed)`)
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
