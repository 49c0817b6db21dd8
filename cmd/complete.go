package cmd

import (
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/s3pd/s3pd/configs"
	"github.com/s3pd/s3pd/pkg/config"
	"github.com/s3pd/s3pd/pkg/s3emu"
	"github.com/s3pd/s3pd/pkg/s3store"
)

// enumFlags are the values of the flags that take one of a few words,
// by flag name, for shell completion: a flag of this name on any
// command completes to them instead of to file names.
func enumFlags(f *Factory) map[string]func() []string {
	fixed := func(v ...string) func() []string { return func() []string { return v } }
	m := map[string]func() []string{
		"verify":             fixed("auto", "full", "require", "off"),
		"adaptive":           fixed("on", "off"),
		"request-payer":      fixed("requester"),
		"checksum-algorithm": fixed(s3store.CRC64NVME, s3store.CRC32C),
		"sse":                fixed("AES256", "aws:kms", "aws:kms:dsse"),
		"storage-class":      fixed(storageClasses...),
		"fs":                 fixed("xfs", "ext4"),
		"engine":             fixed("md", "btrfs"),
		"backend":            fixed(s3emu.BackendSynthetic, s3emu.BackendMemory, s3emu.BackendDiscard),
		config.FlagPreset:    func() []string { return presetNames(f) },
	}
	// The settings that take one of a few words (log_level, log_format,
	// addressing_style, ...) say so in their syntax: "debug|info|...".
	for _, d := range config.All() {
		if strings.Contains(d.Syntax, "|") {
			m[d.Flag] = fixed(strings.Split(d.Syntax, "|")...)
		}
	}
	return m
}

// presetNames are the built-in presets and those saved by bench --sweep
// --save-preset.
func presetNames(f *Factory) []string {
	names := slices.Clone(configs.Names())
	if dir := userPresetDir(f.getenv()); dir != "" {
		entries, _ := os.ReadDir(dir) // none saved: the built-in ones
		for _, e := range entries {
			if n, ok := strings.CutSuffix(e.Name(), ".yaml"); ok && presetName.MatchString(n) && !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	return names
}

// registerCompletions gives every enum flag of c and its subcommands
// the completion of its values.
func registerCompletions(c *cobra.Command, enums map[string]func() []string) {
	c.Flags().VisitAll(func(fl *pflag.Flag) {
		values, ok := enums[fl.Name]
		if !ok {
			return
		}
		complete := func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
			return values(), cobra.ShellCompDirectiveNoFileComp
		}
		if err := c.RegisterFlagCompletionFunc(fl.Name, complete); err != nil {
			panic(err) // a flag of c, registered once
		}
	})
	for _, sub := range c.Commands() {
		registerCompletions(sub, enums)
	}
}
