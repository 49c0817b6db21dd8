package config

import (
	"bytes"
	"errors"
	"fmt"
	iofs "io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// Settings are resolved here, in one place, with this precedence, lowest
// first: defaults, the s3 section of the AWS profile, a preset, the s3pd
// config file (top level, then its profiles entry for the AWS profile),
// the AWS CLI's and then s3pd's environment variables, flags.
//
// viper reads what it reads well: the YAML of presets and config files
// (applyYAML), one viper per file. It is not the precedence, for a reason
// that decides the design: a viper that merges defaults, files,
// environment and flags does not say which source a value came from, and
// `config show`, the overridden-setting warnings, the request budget's
// rule and every error message
// ("setting workers = "0" from env S3PD_WORKERS") need it. Nor does it
// bind the variables and flags here: its BindEnv reads the process's
// environment only (os.LookupEnv), where Sources.Getenv lets a test or a
// caller decide, and its BindPFlag casts a flag's text by type ("--workers
// many" reads as 0), losing the text an error must quote. So each source
// is read, in precedence order, into a Resolver, which parses every value
// with the setting's own parser and records its origin.

// Flags that select sources rather than set a setting, and variables that
// do so.
const (
	FlagProfile = "profile"
	FlagPreset  = "preset"
	FlagConfig  = "config"
	EnvPreset   = "S3PD_PRESET"
	EnvConfig   = "S3PD_CONFIG"
)

// Aliases are the original s3pd's flag names of two settings, kept for
// its users; the new names win when both are given.
var Aliases = []struct{ Flag, Setting string }{
	{"loglevel", "log_level"},
	{"maxlist", "max_queue_size"},
}

// Sources are where Load reads, besides the files the environment names.
type Sources struct {
	// Getenv reads a variable; Environ lists the process's (names only
	// are used: values come through Getenv, so a test's Getenv decides).
	Getenv  func(string) string
	Environ func() []string
	// Flags are the command's flags (nil: none); only those given count.
	Flags *pflag.FlagSet
	// Preset reads a preset by name (the embedded ones, or one saved).
	Preset func(name string) ([]byte, error)
	// KnownEnv are S3PD_* variables that the caller reads itself; any
	// other S3PD_* variable that is not a setting's is an error (a typo).
	KnownEnv []string
	// Profile, when set, is the AWS profile to read, whatever --profile
	// and AWS_PROFILE say, with ProfileOrigin as where it was named: the
	// other side of a copy (--source-profile) is loaded this way.
	Profile       string
	ProfileOrigin Origin
	// SkipFlags are settings whose flags are not read: the flags of one
	// side of a copy that do not apply to the other (--endpoint-url is
	// DEST's when --source-profile names SRC's).
	SkipFlags []string
}

// Loaded is what Load resolved, with the sources it read.
type Loaded struct {
	Settings      Settings
	Origins       *Origins
	Profile       string // the selected AWS profile, "default" when none is
	AWSConfigFile string
	Preset        string
	PresetOrigin  Origin
	ConfigFile    string // "" when none was read
}

// Load resolves the effective settings from src. A bad value is a
// *SettingError naming the setting, the value and its source.
func Load(src Sources) (*Loaded, error) {
	l := &loader{src: src, r: NewResolver(), out: &Loaded{Profile: "default"}}
	if l.src.Getenv == nil {
		l.src.Getenv = os.Getenv
	}
	if l.src.Environ == nil {
		l.src.Environ = os.Environ
	}
	for _, step := range []func() error{l.awsConfig, l.preset, l.file, l.env, l.flags} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	s, origins, err := l.r.Resolve()
	if err != nil {
		return nil, err
	}
	l.out.Settings, l.out.Origins = s, origins
	return l.out, nil
}

// loader is one Load in progress.
type loader struct {
	src             Sources
	r               *Resolver
	out             *Loaded
	ignoreEndpoints bool
}

// flag returns the text of a flag that was given.
func (l *loader) flag(name string) (string, bool) {
	if l.src.Flags == nil {
		return "", false
	}
	fl := l.src.Flags.Lookup(name)
	if fl == nil || !fl.Changed {
		return "", false
	}
	return fl.Value.String(), true
}

// awsConfig selects the AWS profile and reads its s3 section, region and
// endpoint.
func (l *loader) awsConfig() error {
	getenv, out := l.src.Getenv, l.out
	profileOrigin := Origin{}
	if l.src.Profile != "" {
		out.Profile, profileOrigin = l.src.Profile, l.src.ProfileOrigin
	} else if v, ok := l.flag(FlagProfile); ok {
		out.Profile, profileOrigin = v, Origin{Source: SourceFlag, Detail: "--" + FlagProfile}
	} else if v := getenv("AWS_PROFILE"); v != "" {
		out.Profile, profileOrigin = v, Origin{Source: SourceEnv, Detail: "AWS_PROFILE"}
	}
	if profileOrigin.Source != "" {
		l.r.SetProfile(out.Profile, profileOrigin)
	}
	home := getenv("HOME")
	out.AWSConfigFile = getenv("AWS_CONFIG_FILE")
	if out.AWSConfigFile == "" {
		out.AWSConfigFile = filepath.Join(home, ".aws", "config")
	}
	awsCfg, err := ReadAWSConfig(out.AWSConfigFile, false)
	if err != nil {
		return err
	}
	if profileOrigin.Source != "" && !awsCfg.HasProfile(out.Profile) && !credentialsHaveProfile(getenv, home, out.Profile) {
		return &SettingError{Setting: "profile", Value: out.Profile, Origin: profileOrigin,
			Err: fmt.Errorf("no such profile in %s or the credentials file", out.AWSConfigFile)}
	}
	s3 := awsCfg.Section(out.Profile, "s3")
	awsOrigin := Origin{Source: SourceAWSConfig, Detail: fmt.Sprintf("%s [%s] s3", out.AWSConfigFile, out.Profile)}
	for _, d := range All() {
		if v, ok := s3[d.Name]; ok && d.AWSCLI {
			if err := l.r.Set(d.Name, v, awsOrigin); err != nil {
				return err
			}
		}
	}
	l.ignoreEndpoints = isTrue(getenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"))
	if v, ok := awsCfg.Get(out.Profile, "ignore_configured_endpoint_urls"); ok && getenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS") == "" {
		l.ignoreEndpoints = isTrue(v)
	}
	return awsProfileSettings(l.r, awsCfg, out.Profile, l.ignoreEndpoints)
}

// preset reads --preset or S3PD_PRESET.
func (l *loader) preset() error {
	out := l.out
	if v, ok := l.flag(FlagPreset); ok {
		out.Preset, out.PresetOrigin = v, Origin{Source: SourceFlag, Detail: "--" + FlagPreset}
	} else if v := l.src.Getenv(EnvPreset); v != "" {
		out.Preset, out.PresetOrigin = v, Origin{Source: SourceEnv, Detail: EnvPreset}
	}
	if out.Preset == "" {
		return nil
	}
	if l.src.Preset == nil {
		return &SettingError{Setting: "preset", Value: out.Preset, Origin: out.PresetOrigin, Err: errors.New("no presets")}
	}
	b, err := l.src.Preset(out.Preset)
	if err != nil {
		return &SettingError{Setting: "preset", Value: out.Preset, Origin: out.PresetOrigin, Err: err}
	}
	or := Origin{Source: SourcePreset, Detail: out.Preset}
	return applyYAML(l.r, b, "preset "+out.Preset, false, "", or, Origin{})
}

// file reads the s3pd config file: --config, S3PD_CONFIG, or the default
// place when it exists.
func (l *loader) file() error {
	getenv := l.src.Getenv
	file, fileOrigin, explicit := "", Origin{}, false
	if v, ok := l.flag(FlagConfig); ok {
		file, fileOrigin, explicit = v, Origin{Source: SourceFlag, Detail: "--" + FlagConfig}, true
	} else if v := getenv(EnvConfig); v != "" {
		file, fileOrigin, explicit = v, Origin{Source: SourceEnv, Detail: EnvConfig}, true
	} else if xdg := getenv("XDG_CONFIG_HOME"); xdg != "" {
		file = filepath.Join(xdg, "s3pd", "config.yaml")
	} else if home := getenv("HOME"); home != "" {
		file = filepath.Join(home, ".config", "s3pd", "config.yaml")
	}
	if file == "" {
		return nil
	}
	b, err := os.ReadFile(file)
	switch {
	case errors.Is(err, iofs.ErrNotExist) && !explicit:
		return nil
	case err != nil:
		return &SettingError{Setting: "config", Value: file, Origin: fileOrigin, Err: err}
	}
	l.out.ConfigFile = file
	top := Origin{Source: SourceFile, Detail: file}
	prof := Origin{Source: SourceProfile, Detail: fmt.Sprintf("%s in %s", l.out.Profile, file)}
	return applyYAML(l.r, b, file, true, l.out.Profile, top, prof)
}

// env reads the AWS CLI's variables, then s3pd's, which win, and refuses
// S3PD_* variables that name nothing.
func (l *loader) env() error {
	getenv := l.src.Getenv
	if err := awsEnvSettings(l.r, getenv, l.ignoreEndpoints); err != nil {
		return err
	}
	known := map[string]bool{EnvPreset: true, EnvConfig: true}
	for _, name := range l.src.KnownEnv {
		known[name] = true
	}
	for _, d := range All() {
		known[d.Env()] = true
		if val := getenv(d.Env()); val != "" {
			if err := l.r.Set(d.Name, val, Origin{Source: SourceEnv, Detail: d.Env()}); err != nil {
				return err
			}
		}
	}
	var unknown []string
	for _, kv := range l.src.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, EnvPrefix) && !known[name] && getenv(name) != "" {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	sort.Strings(unknown)
	return &SettingError{Setting: strings.ToLower(strings.TrimPrefix(unknown[0], EnvPrefix)),
		Value: getenv(unknown[0]), Origin: Origin{Source: SourceEnv, Detail: unknown[0]},
		Err: fmt.Errorf("unknown variable (known: %s)", strings.Join(slices.Sorted(maps.Keys(known)), ", "))}
}

// flags reads the settings' flags: the original's aliases first, so the
// new names win.
func (l *loader) flags() error {
	for _, a := range Aliases {
		if v, ok := l.flag(a.Flag); ok {
			if err := l.r.Set(a.Setting, v, Origin{Source: SourceFlag, Detail: "--" + a.Flag}); err != nil {
				return err
			}
		}
	}
	for _, d := range All() {
		if slices.Contains(l.src.SkipFlags, d.Name) {
			continue
		}
		if v, ok := l.flag(d.Flag); ok {
			if err := l.r.Set(d.Name, v, Origin{Source: SourceFlag, Detail: "--" + d.Flag}); err != nil {
				return err
			}
		}
	}
	return nil
}

// credentialsHaveProfile reports whether the AWS credentials file defines
// profile: the AWS CLI accepts a profile defined in either file.
func credentialsHaveProfile(getenv func(string) string, home, profile string) bool {
	path := getenv("AWS_SHARED_CREDENTIALS_FILE")
	if path == "" {
		path = filepath.Join(home, ".aws", "credentials")
	}
	c, err := ReadAWSConfig(path, true)
	return err == nil && c.HasProfile(profile)
}

// applyYAML reads settings from a preset or s3pd config file with viper.
// Top-level keys are settings; with profiles, a `profiles:` map whose
// entry named profile overrides them (origin prof). Unknown keys are errors.
func applyYAML(r *Resolver, b []byte, name string, profiles bool, profile string, top, prof Origin) error {
	v := viper.NewWithOptions(viper.KeyDelimiter("::"))
	v.SetConfigType("yaml")
	if err := v.ReadConfig(bytes.NewReader(b)); err != nil {
		return fmt.Errorf("read %s: malformed YAML: %w", name, err)
	}
	var entry map[string]any
	keys := v.AllKeys()
	sort.Strings(keys)
	type kv struct{ key, value string }
	var topVals []kv
	for _, key := range keys {
		parts := strings.Split(key, "::")
		if profiles && parts[0] == "profiles" {
			continue
		}
		if len(parts) > 1 {
			if _, ok := Lookup(parts[0]); ok {
				return &SettingError{Setting: parts[0], Value: fmt.Sprint(v.Get(parts[0])), Origin: top, Err: errors.New("want a value, not a map")}
			}
		}
		val, err := yamlText(v.Get(key))
		if err != nil {
			return &SettingError{Setting: strings.ReplaceAll(key, "::", "."), Value: fmt.Sprint(v.Get(key)), Origin: top, Err: err}
		}
		topVals = append(topVals, kv{strings.ReplaceAll(key, "::", "."), val})
	}
	for _, e := range topVals {
		if err := r.Set(e.key, e.value, top); err != nil {
			return err
		}
	}
	if !profiles || !v.IsSet("profiles") {
		return nil
	}
	all, ok := v.Get("profiles").(map[string]any)
	if !ok {
		if v.Get("profiles") == nil {
			return nil
		}
		return &SettingError{Setting: "profiles", Value: fmt.Sprint(v.Get("profiles")), Origin: top,
			Err: errors.New("want a map of AWS profile names to settings")}
	}
	for pname, raw := range all {
		m, ok := raw.(map[string]any)
		if !ok && raw != nil {
			return &SettingError{Setting: "profiles." + pname, Value: fmt.Sprint(raw), Origin: top,
				Err: errors.New("want a map of settings")}
		}
		// Check every entry, not only the selected one, so typos surface.
		po := Origin{Source: SourceProfile, Detail: fmt.Sprintf("%s in %s", pname, top.Detail)}
		if strings.EqualFold(pname, profile) {
			po = prof
			entry = m
		}
		for key := range m {
			if _, known := Lookup(key); !known {
				return &SettingError{Setting: key, Value: fmt.Sprint(m[key]), Origin: po,
					Err: unknownSetting(key)}
			}
		}
	}
	keys = keys[:0]
	for key := range entry {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	for _, key := range keys {
		val, err := yamlText(entry[key])
		if err == nil {
			err = r.Set(key, val, prof)
		} else {
			err = &SettingError{Setting: key, Value: fmt.Sprint(entry[key]), Origin: prof, Err: err}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// yamlText turns a YAML value into the text the settings' parsers read.
func yamlText(v any) (string, error) {
	switch t := v.(type) {
	case nil:
		return "", nil
	case string:
		return t, nil
	case bool:
		return strconv.FormatBool(t), nil
	case int:
		return strconv.Itoa(t), nil
	case int64:
		return strconv.FormatInt(t, 10), nil
	case uint64:
		return strconv.FormatUint(t, 10), nil
	case float64:
		if t == math.Trunc(t) && math.Abs(t) < 1<<53 {
			return strconv.FormatInt(int64(t), 10), nil
		}
		return strconv.FormatFloat(t, 'g', -1, 64), nil
	case []any:
		parts := make([]string, len(t))
		for i, e := range t {
			s, err := yamlText(e)
			if err != nil {
				return "", err
			}
			parts[i] = s
		}
		return strings.Join(parts, ","), nil
	case map[string]any:
		return "", errors.New("want a value, not a map")
	default:
		return fmt.Sprint(t), nil
	}
}

// awsProfileSettings reads what the AWS CLI reads from a profile besides
// its s3 section: region, ca_bundle, and endpoint_url (the [services NAME] section's
// s3 block first, as the AWS CLI does, then the profile's own).
func awsProfileSettings(r *Resolver, c *AWSConfig, profile string, ignoreEndpoints bool) error {
	at := func(what string) Origin {
		return Origin{Source: SourceAWSConfig, Detail: fmt.Sprintf("%s [%s] %s", c.Path, profile, what)}
	}
	for _, name := range []string{"region", "ca_bundle"} {
		if v, ok := c.Get(profile, name); ok && v != "" {
			if err := r.Set(name, v, at(name)); err != nil {
				return err
			}
		}
	}
	if ignoreEndpoints {
		return nil
	}
	if svc, ok := c.Get(profile, "services"); ok {
		if v := c.Service(svc, "s3")["endpoint_url"]; v != "" {
			return r.Set("endpoint_url", v, at("services "+svc+" s3 endpoint_url"))
		}
	}
	if v, ok := c.Get(profile, "endpoint_url"); ok && v != "" {
		return r.Set("endpoint_url", v, at("endpoint_url"))
	}
	return nil
}

// awsEnvSettings reads the AWS CLI's variables for the region, the CA
// bundle and the endpoint, the more specific one last so that it wins.
func awsEnvSettings(r *Resolver, getenv func(string) string, ignoreEndpoints bool) error {
	vars := []struct{ name, setting string }{
		{"AWS_DEFAULT_REGION", "region"}, {"AWS_REGION", "region"}, {"AWS_CA_BUNDLE", "ca_bundle"},
	}
	if !ignoreEndpoints {
		vars = append(vars, struct{ name, setting string }{"AWS_ENDPOINT_URL", "endpoint_url"},
			struct{ name, setting string }{"AWS_ENDPOINT_URL_S3", "endpoint_url"})
	}
	for _, v := range vars {
		if val := getenv(v.name); val != "" {
			if err := r.Set(v.setting, val, Origin{Source: SourceEnv, Detail: v.name}); err != nil {
				return err
			}
		}
	}
	return nil
}

func isTrue(v string) bool { b, _ := strconv.ParseBool(strings.TrimSpace(v)); return b }
