package cmd

import (
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	"github.com/spf13/pflag"
)

// NewCmdMan builds the hidden `s3pd man DIR`, which writes one man page
// per command (s3pd.1, s3pd-get.1, ...) for release archives and
// packages.
func NewCmdMan(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:    "man DIR",
		Short:  "Write the man pages into DIR",
		Hidden: true,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("man takes one directory, got %d argument(s)", len(args))
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			if err := os.MkdirAll(args[0], 0o755); err != nil {
				return usageErrorf("man: %w", err)
			}
			root := c.Root()
			root.DisableAutoGenTag = true // pages do not change with the day they were built
			escapeForMan(root)
			header := &doc.GenManHeader{Title: "S3PD", Section: "1", Source: "s3pd " + f.Version, Manual: "s3pd manual"}
			return doc.GenManTree(root, header, args[0])
		},
	}
}

// markdownEscaper escapes what Markdown would read as markup: cobra's
// man pages go through go-md2man, which would take "*.safetensors" for
// emphasis and "<basename>" for an HTML tag, and drop both.
var markdownEscaper = strings.NewReplacer(
	`\`, `\\`, "`", "\\`", `*`, `\*`, `_`, `\_`, `<`, `\<`, `>`, `\>`, `[`, `\[`, `]`, `\]`, `&`, `\&`,
)

// escapeForMan escapes the text of every command under c and of their
// flags, so the pages say what --help says. The man command runs once
// and exits, so the tree can be changed in place.
func escapeForMan(c *cobra.Command) {
	c.Short, c.Long = markdownEscaper.Replace(c.Short), markdownEscaper.Replace(c.Long)
	esc := func(fl *pflag.Flag) { fl.Usage = markdownEscaper.Replace(fl.Usage) }
	c.LocalFlags().VisitAll(esc)
	c.PersistentFlags().VisitAll(func(fl *pflag.Flag) {
		if c.LocalFlags().Lookup(fl.Name) == nil {
			esc(fl)
		}
	})
	for _, sub := range c.Commands() {
		escapeForMan(sub)
	}
}
