package cmd

import (
	"github.com/spf13/pflag"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// ruleFlags keeps --include and --exclude in the order given, as the
// AWS CLI applies them.
type ruleFlags struct{ rules transfer.Rules }

func (r *ruleFlags) register(fs *pflag.FlagSet) {
	fs.Var(&ruleValue{r, true}, "include", "include names matching this pattern (repeatable; later rules win)")
	fs.Var(&ruleValue{r, false}, "exclude", "exclude names matching this pattern (repeatable; later rules win)")
}

type ruleValue struct {
	r       *ruleFlags
	include bool
}

func (v *ruleValue) String() string { return "" }
func (v *ruleValue) Type() string   { return "pattern" }
func (v *ruleValue) Set(s string) error {
	v.r.rules = append(v.r.rules, transfer.Rule{Include: v.include, Pattern: s})
	return nil
}
