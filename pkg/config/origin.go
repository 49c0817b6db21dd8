package config

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// SourceKind names the kind of place a value came from.
type SourceKind string

// Sources, lowest precedence first; Derived marks values computed from
// other settings.
const (
	SourceDefault   SourceKind = "default"
	SourceAWSConfig SourceKind = "aws-config"
	SourcePreset    SourceKind = "preset"
	SourceFile      SourceKind = "file"
	SourceProfile   SourceKind = "profile"
	SourceEnv       SourceKind = "env"
	SourceFlag      SourceKind = "flag"
	SourceDerived   SourceKind = "derived"
)

// Rank is the precedence of a source: higher wins; 0 for default and
// derived values, which no source set.
func (s SourceKind) Rank() int {
	switch s {
	case SourceAWSConfig:
		return 1
	case SourcePreset:
		return 2
	case SourceFile:
		return 3
	case SourceProfile:
		return 4
	case SourceEnv:
		return 5
	case SourceFlag:
		return 6
	}
	return 0
}

// Origin is where one value came from: a source and the exact place in it
// (a file and section, a variable, a flag).
type Origin struct {
	Source SourceKind `json:"source"`
	// Detail names the place: "/home/u/.aws/config [profile dev]",
	// "S3PD_WORKERS", "--partsize", "from target_bandwidth".
	Detail string `json:"detail,omitempty"`
}

func (o Origin) String() string {
	if o.Source == "" {
		return string(SourceDefault)
	}
	if o.Detail == "" {
		return string(o.Source)
	}
	return string(o.Source) + " " + o.Detail
}

// Origins records where each effective setting came from.
type Origins struct {
	byName map[string]Origin
	// overridden says, for a value a source set and derivation replaced,
	// what it was and why it was replaced.
	overridden map[string]string
	// budget says which rule set the request budget, and its value.
	budget string
}

// NewOrigins returns origins in which every setting is a default.
func NewOrigins() *Origins {
	return &Origins{byName: map[string]Origin{}, overridden: map[string]string{}}
}

// Overridden returns, for the setting named name, a sentence saying which
// value from which source derivation replaced and why ("" when none).
func (o *Origins) Overridden(name string) string { return o.overridden[name] }

// Budget returns a sentence naming the rule that set the request budget
// (max_concurrent_requests) and what it was computed from.
func (o *Origins) Budget() string { return o.budget }

// Warnings returns one sentence per overridden setting, in name order.
func (o *Origins) Warnings() []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(o.overridden)) {
		out = append(out, o.overridden[name])
	}
	return out
}

// Ranks returns the precedence (Source.Rank) of each setting some source
// set: the input of Settings.DeriveRanked.
func (o *Origins) Ranks() map[string]int {
	out := map[string]int{}
	for name, or := range o.byName {
		if r := or.Source.Rank(); r > 0 {
			out[name] = r
		}
	}
	return out
}

// Get returns the origin of the setting named name.
func (o *Origins) Get(name string) Origin {
	if or, ok := o.byName[name]; ok {
		return or
	}
	return Origin{Source: SourceDefault}
}

// Set records that the setting named name came from or.
func (o *Origins) Set(name string, or Origin) { o.byName[name] = or }

// Explicit returns the names of the settings some source set (neither
// default nor derived): the input of Settings.Derive.
func (o *Origins) Explicit() map[string]bool {
	out := map[string]bool{}
	for name, or := range o.byName {
		if or.Source != SourceDefault && or.Source != SourceDerived {
			out[name] = true
		}
	}
	return out
}

// Clone returns a copy of o.
func (o *Origins) Clone() *Origins {
	return &Origins{byName: maps.Clone(o.byName), overridden: maps.Clone(o.overridden), budget: o.budget}
}

// SettingError is a bad value: it names the setting and where the value
// came from, and quotes the value only where Printable allows (a value may
// be a secret put in the wrong place).
type SettingError struct {
	Setting string
	Value   string
	Origin  Origin
	Err     error
}

func (e *SettingError) Error() string {
	if v, ok := Printable(e.Setting, e.Value); ok {
		return fmt.Sprintf("setting %s = %q from %s: %v", e.Setting, v, e.Origin, e.Err)
	}
	return fmt.Sprintf("setting %s from %s: %v", e.Setting, e.Origin, e.Err)
}

func (e *SettingError) Unwrap() error { return e.Err }

// IsUnknown reports whether err is about a key that is not a setting.
func IsUnknown(err error) bool { return errors.Is(err, errUnknown) }

// Resolver applies values from sources, lowest precedence first, and
// records their origins; Resolve derives and validates the result.
type Resolver struct {
	settings Settings
	origins  *Origins
}

// NewResolver starts from the defaults.
func NewResolver() *Resolver {
	return &Resolver{settings: Defaults(), origins: NewOrigins()}
}

// Set parses value for the setting named name, from or; a later Set of the
// same name overrides it. The error is a *SettingError.
func (r *Resolver) Set(name, value string, or Origin) error {
	if err := r.settings.Set(name, value); err != nil {
		return &SettingError{Setting: name, Value: value, Origin: or, Err: err}
	}
	r.origins.Set(name, or)
	return nil
}

// SetProfile records the selected AWS profile and its origin. Only a
// profile given by flag becomes Settings.Profile, which clients ask the
// SDK for by name: one from AWS_PROFILE is left to the SDK, which reads
// it itself and, as the AWS CLI v2, lets keys in the environment win
// over it (a named profile wins over them).
func (r *Resolver) SetProfile(name string, or Origin) {
	if or.Source == SourceFlag {
		r.settings.Profile = name
	}
	r.origins.Set("profile", or)
}

// Resolve derives unset concurrency settings (see Settings.Derive),
// validates the result and returns it with the origins.
func (r *Resolver) Resolve() (Settings, *Origins, error) {
	s := r.settings
	s.NICs = append([]string(nil), s.NICs...)
	origins := r.origins.Clone()
	derived, rule := s.DeriveRanked(origins.Ranks())
	for _, d := range derived {
		if d.Overrode != "" {
			was := origins.Get(d.Setting)
			origins.overridden[d.Setting] = fmt.Sprintf("%s = %s from %s is overridden: %s = %s, from %s set at a higher precedence",
				d.Setting, d.Overrode, was, d.Setting, s.Format(d.Setting), d.From)
		}
		origins.Set(d.Setting, Origin{Source: SourceDerived, Detail: "from " + d.From})
	}
	origins.budget = budgetSentence(s, rule, origins)
	if err := s.Validate(); err != nil {
		var se *SettingError
		if errors.As(err, &se) {
			se.Origin = origins.Get(se.Setting)
		}
		return Settings{}, nil, err
	}
	return s, origins, nil
}

// budgetSentence says how many requests may be in flight and by which
// rule of DeriveRanked.
func budgetSentence(s Settings, rule string, o *Origins) string {
	n := s.MaxConcurrentRequests
	switch rule {
	case BudgetFromWorkers:
		threads := fmt.Sprint(s.Threads)
		if s.Threads == 0 {
			threads = fmt.Sprintf("%d (threads not set)", BudgetThreads)
		}
		return fmt.Sprintf("%d requests in flight: workers x threads = %d x %s, as workers or threads are set and max_concurrent_requests is not set at the same or a higher precedence", n, s.Workers, threads)
	case BudgetFromBandwidth:
		return fmt.Sprintf("%d requests in flight: from target_bandwidth (%s), one connection per %s/s", n, o.Get("target_bandwidth"), FormatSize(ConnectionBandwidth))
	case BudgetFromRequests:
		return fmt.Sprintf("%d requests in flight: max_concurrent_requests (%s)", n, o.Get("max_concurrent_requests"))
	}
	return fmt.Sprintf("%d requests in flight: the default max_concurrent_requests", n)
}
