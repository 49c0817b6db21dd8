package cmd

import (
	"errors"
	"time"

	"github.com/spf13/pflag"
)

// durationFlag is a duration flag that refuses what means nothing: a
// negative duration always, and zero unless zero means "none" for it. A
// refused value is a flag error (one line, exit 2), never silently taken.
type durationFlag struct {
	d         *time.Duration
	allowZero bool
}

// positiveDurationVar defines a duration flag that must be above zero.
func positiveDurationVar(fs *pflag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	fs.Var(durationFlag{d: p}, name, usage)
}

// nonNegativeDurationVar defines a duration flag for which 0 means none.
func nonNegativeDurationVar(fs *pflag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	fs.Var(durationFlag{d: p, allowZero: true}, name, usage)
}

func (f durationFlag) Set(s string) error {
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		return errors.New("want a duration such as 30s, 500ms or 2m")
	case d < 0:
		return errors.New("a duration cannot be negative")
	case d == 0 && !f.allowZero:
		return errors.New("want a duration above zero")
	}
	*f.d = d
	return nil
}

func (f durationFlag) String() string {
	if f.d == nil {
		return "0s"
	}
	return f.d.String()
}

func (durationFlag) Type() string { return "duration" }
