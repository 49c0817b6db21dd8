package cmd

import (
	"fmt"

	"github.com/spf13/pflag"
)

// registerHabits adds the AWS CLI's names for what s3pd spells otherwise,
// hidden, so that its users' commands run unchanged: --dryrun,
// --no-progress, --only-show-errors, --debug, and with a note of what
// s3pd does instead, --recursive (s3pd always walks a prefix),
// --exact-timestamps (s3pd always compares exactly) and --page-size
// (s3pd asks for the largest pages).
func (o *outputFlags) registerHabits(fs *pflag.FlagSet) {
	hide := func(name string) {
		if err := fs.MarkHidden(name); err != nil {
			panic(err) // a flag registered just above
		}
	}
	fs.BoolVar(&o.dryRun, "dryrun", false, "the AWS CLI's name of --dry-run")
	fs.BoolVar(&o.noProgress, "no-progress", false, "no progress bar; the summary and the lines stay (as the AWS CLI's flag)")
	fs.BoolVar(&o.recursive, "recursive", false, "accepted for the AWS CLI's habit: s3pd always copies a prefix recursively")
	fs.Var(&setsFlags{fs: fs, set: map[string]string{"log-level": "debug"}}, "debug", "the AWS CLI's --debug: --log-level debug")
	fs.Var(&setsFlags{fs: fs, set: map[string]string{"log-level": "warn"}, also: func() { o.quiet, o.onlyErrors = true, true }},
		"only-show-errors", "the AWS CLI's --only-show-errors: errors and warnings only, no progress and no summary")
	fs.BoolVar(&o.exactTimestamps, "exact-timestamps", false, "accepted for the AWS CLI's habit: s3pd always keeps a file only when its size and modification time equal the object's")
	fs.IntVar(&o.pageSize, "page-size", 0, "accepted for the AWS CLI's habit: s3pd asks for the largest pages S3 gives (1,000 keys)")
	for _, name := range []string{"dryrun", "no-progress", "recursive", "debug", "only-show-errors", "exact-timestamps"} {
		fs.Lookup(name).NoOptDefVal = "true"
		hide(name)
	}
	hide("page-size")
}

// setsFlags is a boolean flag that sets other flags of its set when given.
type setsFlags struct {
	fs   *pflag.FlagSet
	set  map[string]string
	also func()
	on   bool
}

func (v *setsFlags) String() string { return fmt.Sprint(v.on) }
func (v *setsFlags) Type() string   { return "bool" }
func (v *setsFlags) Set(s string) error {
	if s != "true" {
		return fmt.Errorf("takes no value")
	}
	v.on = true
	for name, value := range v.set {
		if v.fs.Lookup(name) == nil {
			continue
		}
		if err := v.fs.Set(name, value); err != nil {
			return err
		}
	}
	if v.also != nil {
		v.also()
	}
	return nil
}
