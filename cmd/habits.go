package cmd

import (
	"fmt"

	"github.com/spf13/pflag"
)

// registerHabits adds the AWS CLI's names for what s3pd spells otherwise,
// hidden, so that its users' commands run unchanged: --dryrun,
// --no-progress, --only-show-errors, --debug and --recursive (a no-op:
// s3pd always walks a prefix).
func (o *outputFlags) registerHabits(fs *pflag.FlagSet) {
	hide := func(name string) {
		if err := fs.MarkHidden(name); err != nil {
			panic(err) // a flag registered just above
		}
	}
	fs.BoolVar(&o.dryRun, "dryrun", false, "the AWS CLI's name of --dry-run")
	fs.BoolVar(&o.quiet, "no-progress", false, "the AWS CLI's name of --quiet")
	fs.BoolVar(&o.recursive, "recursive", false, "accepted for the AWS CLI's habit: s3pd always copies a prefix recursively")
	fs.Var(&setsFlags{fs: fs, set: map[string]string{"log-level": "debug"}}, "debug", "the AWS CLI's --debug: --log-level debug")
	fs.Var(&setsFlags{fs: fs, set: map[string]string{"log-level": "warn"}, also: func() { o.quiet, o.onlyErrors = true, true }},
		"only-show-errors", "the AWS CLI's --only-show-errors: errors and warnings only, no progress and no summary")
	for _, name := range []string{"dryrun", "no-progress", "recursive", "debug", "only-show-errors"} {
		fs.Lookup(name).NoOptDefVal = "true"
		hide(name)
	}
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
