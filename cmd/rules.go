package cmd

import (
	"github.com/spf13/pflag"

	"github.com/s3pd/s3pd/pkg/s3store"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// ruleFlags keeps --include and --exclude in the order given, as the
// AWS CLI applies them, and whether a source key's wildcards count.
type ruleFlags struct {
	rules transfer.Rules
	raw   bool
	// firstInclude is the pattern of an --include given before any
	// --exclude ("" when none is): refuseIncludeAlone refuses it.
	firstInclude string
	excluded     bool
}

func (r *ruleFlags) register(fs *pflag.FlagSet) {
	fs.Var(&ruleValue{r, true}, "include", "include names matching this pattern (repeatable; later rules win)")
	fs.Var(&ruleValue{r, false}, "exclude", "exclude names matching this pattern (repeatable; later rules win)")
	fs.BoolVar(&r.raw, "raw", false, `take the source key literally: "*" and "?" in it are not wildcards`)
}

// parseSource parses an s3:// source. Unless --raw, the wildcards of its
// key (s3://b/p/*.safetensors) become rules ahead of --include/--exclude.
func (r *ruleFlags) parseSource(s string) (s3store.URL, error) {
	if r.raw {
		return s3store.ParseRawURL(s)
	}
	u, err := s3store.ParseURL(s)
	if err == nil {
		r.rules = u.Rules(r.rules)
	}
	return u, err
}

type ruleValue struct {
	r       *ruleFlags
	include bool
}

func (v *ruleValue) String() string { return "" }
func (v *ruleValue) Type() string   { return "pattern" }
func (v *ruleValue) Set(s string) error {
	switch {
	case !v.include:
		v.r.excluded = true
	case !v.r.excluded && v.r.firstInclude == "":
		v.r.firstInclude = s
	}
	v.r.rules = append(v.r.rules, transfer.Rule{Include: v.include, Pattern: s})
	return nil
}
