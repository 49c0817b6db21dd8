package cmd

import (
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
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
			header := &doc.GenManHeader{Title: "S3PD", Section: "1", Source: "s3pd " + f.Version, Manual: "s3pd manual"}
			return doc.GenManTree(root, header, args[0])
		},
	}
}
