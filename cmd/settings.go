package cmd

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

	"github.com/s3pd/s3pd/configs"
	"github.com/s3pd/s3pd/pkg/config"
	"github.com/s3pd/s3pd/pkg/shard"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// Flags that select sources rather than set a setting, and their
// environment variables.
const (
	flagProfile = "profile"
	flagPreset  = "preset"
	flagConfig  = "config"
	envPreset   = "S3PD_PRESET"
	envConfig   = "S3PD_CONFIG"
	// envTestPrefix starts variables read by s3pd's test suite, not by s3pd.
	envTestPrefix = "S3PD_TEST_"
)

// testHarnessEnv are variables of s3pd's test suite that predate the
// S3PD_TEST_ prefix; s3pd ignores them.
var testHarnessEnv = []string{"S3PD_NETNS_REQUIRED"}

// hiddenAliases are the original s3pd's flag names, kept for its users.
var hiddenAliases = []struct{ flag, setting string }{
	{"loglevel", "log_level"},
	{"maxlist", "max_queue_size"},
}

// settingFlag holds a setting's flag text unparsed: loadSettings parses it
// with the same parser as every other source, so errors read the same.
type settingFlag struct {
	value, syntax string
	list, set     bool
}

func (v *settingFlag) String() string { return v.value }
func (v *settingFlag) Type() string   { return v.syntax }
func (v *settingFlag) Set(s string) error {
	if v.list && v.set && s != "" {
		v.value += "," + s
	} else {
		v.value = s
	}
	v.set = true
	return nil
}

// addSettingsFlags registers every setting's flag on fs (--workers,
// --partsize, --max-concurrent-requests, ...; see config.All), the source
// selectors --profile, --preset and --config, and the original s3pd's
// hidden aliases --loglevel and --maxlist.
func addSettingsFlags(fs *pflag.FlagSet) {
	def := config.Defaults()
	for _, d := range config.All() {
		syntax, values := d.Syntax, ""
		if strings.Contains(syntax, "|") {
			syntax, values = "string", "; one of "+strings.ReplaceAll(d.Syntax, "|", ", ")
		}
		v := &settingFlag{syntax: syntax, list: d.Syntax == "list"}
		usage := d.Usage + values + " (" + d.Name + ")"
		if d.Bool {
			v.syntax = "bool"
		}
		fl := fs.VarPF(v, d.Flag, "", usage)
		fl.DefValue = def.Format(d.Name)
		if d.Bool {
			fl.NoOptDefVal = "true"
		}
	}
	for _, a := range hiddenAliases {
		d, _ := config.Lookup(a.setting)
		fs.Var(&settingFlag{syntax: d.Syntax}, a.flag, "alias of --"+d.Flag)
		_ = fs.MarkHidden(a.flag)
	}
	fs.String(flagProfile, "", "AWS profile whose s3 settings and credentials to use (default: AWS_PROFILE, else default)")
	fs.String(flagPreset, "", "preset settings for a machine: "+strings.Join(configs.Names(), ", ")+", or one saved by bench --sweep --save-preset (env S3PD_PRESET)")
	fs.String(flagConfig, "", "s3pd config file (env S3PD_CONFIG; default ~/.config/s3pd/config.yaml if present)")
}

// loadSettings resolves the effective settings with the precedence, lowest
// first: defaults, the s3 section of the AWS profile, a preset, the s3pd
// config file (top level, then its profiles entry for the AWS profile),
// S3PD_* variables, flags. A bad value is a usage error (exit 2) naming
// the setting, the value and its source.
func loadSettings(f *Factory, fs *pflag.FlagSet) (config.Settings, *config.Origins, error) {
	l, err := resolveSettings(f, fs)
	if err != nil {
		return config.Settings{}, nil, err
	}
	if f != nil {
		f.warnings = l.origins.Warnings()
	}
	return l.settings, l.origins, nil
}

// loaded is the outcome of resolveSettings, with the sources it read.
type loaded struct {
	settings      config.Settings
	origins       *config.Origins
	profile       string // selected AWS profile, "default" when none is
	awsConfigFile string
	preset        string
	presetOrigin  config.Origin
	configFile    string // "" when none was read
}

func resolveSettings(f *Factory, fs *pflag.FlagSet) (*loaded, error) {
	getenv := os.Getenv
	if f != nil && f.Getenv != nil {
		getenv = f.Getenv
	}
	flagValue := func(name string) (string, bool) {
		if fs == nil {
			return "", false
		}
		fl := fs.Lookup(name)
		if fl == nil || !fl.Changed {
			return "", false
		}
		return fl.Value.String(), true
	}
	home := getenv("HOME")
	r := config.NewResolver()
	out := &loaded{profile: "default"}

	// AWS profile and the s3 section of the AWS config file.
	profileOrigin := config.Origin{}
	if v, ok := flagValue(flagProfile); ok {
		out.profile, profileOrigin = v, config.Origin{Source: config.SourceFlag, Detail: "--" + flagProfile}
	} else if v := getenv("AWS_PROFILE"); v != "" {
		out.profile, profileOrigin = v, config.Origin{Source: config.SourceEnv, Detail: "AWS_PROFILE"}
	}
	if profileOrigin.Source != "" {
		r.SetProfile(out.profile, profileOrigin)
	}
	out.awsConfigFile = getenv("AWS_CONFIG_FILE")
	if out.awsConfigFile == "" {
		out.awsConfigFile = filepath.Join(home, ".aws", "config")
	}
	awsCfg, err := config.ReadAWSConfig(out.awsConfigFile, false)
	if err != nil {
		return nil, usageError(err)
	}
	if profileOrigin.Source != "" && !awsCfg.HasProfile(out.profile) {
		if !credentialsHaveProfile(getenv, home, out.profile) {
			return nil, usageError(&config.SettingError{Setting: "profile", Value: out.profile, Origin: profileOrigin,
				Err: fmt.Errorf("no such profile in %s or the credentials file", out.awsConfigFile)})
		}
	}
	s3 := awsCfg.Section(out.profile, "s3")
	awsOrigin := config.Origin{Source: config.SourceAWSConfig, Detail: fmt.Sprintf("%s [%s] s3", out.awsConfigFile, out.profile)}
	for _, d := range config.All() {
		if v, ok := s3[d.Name]; ok && d.AWSCLI {
			if err := r.Set(d.Name, v, awsOrigin); err != nil {
				return nil, usageError(err)
			}
		}
	}

	ignoreEndpoints := isTrue(getenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"))
	if v, ok := awsCfg.Get(out.profile, "ignore_configured_endpoint_urls"); ok && getenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS") == "" {
		ignoreEndpoints = isTrue(v)
	}
	if err := awsProfileSettings(r, awsCfg, out.profile, ignoreEndpoints); err != nil {
		return nil, usageError(err)
	}

	// Preset.
	if v, ok := flagValue(flagPreset); ok {
		out.preset, out.presetOrigin = v, config.Origin{Source: config.SourceFlag, Detail: "--" + flagPreset}
	} else if v := getenv(envPreset); v != "" {
		out.preset, out.presetOrigin = v, config.Origin{Source: config.SourceEnv, Detail: envPreset}
	}
	if out.preset != "" {
		b, err := readPreset(getenv, out.preset)
		if err != nil {
			return nil, usageError(&config.SettingError{Setting: "preset", Value: out.preset, Origin: out.presetOrigin, Err: err})
		}
		or := config.Origin{Source: config.SourcePreset, Detail: out.preset}
		if err := applyYAML(r, b, "preset "+out.preset, false, "", or, config.Origin{}); err != nil {
			return nil, usageError(err)
		}
	}

	// s3pd config file.
	file, fileOrigin, explicit := "", config.Origin{}, false
	if v, ok := flagValue(flagConfig); ok {
		file, fileOrigin, explicit = v, config.Origin{Source: config.SourceFlag, Detail: "--" + flagConfig}, true
	} else if v := getenv(envConfig); v != "" {
		file, fileOrigin, explicit = v, config.Origin{Source: config.SourceEnv, Detail: envConfig}, true
	} else if xdg := getenv("XDG_CONFIG_HOME"); xdg != "" {
		file = filepath.Join(xdg, "s3pd", "config.yaml")
	} else if home != "" {
		file = filepath.Join(home, ".config", "s3pd", "config.yaml")
	}
	if file != "" {
		b, err := os.ReadFile(file)
		switch {
		case errors.Is(err, iofs.ErrNotExist) && !explicit:
		case err != nil:
			return nil, usageError(&config.SettingError{Setting: "config", Value: file, Origin: fileOrigin, Err: err})
		default:
			out.configFile = file
			top := config.Origin{Source: config.SourceFile, Detail: file}
			prof := config.Origin{Source: config.SourceProfile, Detail: fmt.Sprintf("%s in %s", out.profile, file)}
			if err := applyYAML(r, b, file, true, out.profile, top, prof); err != nil {
				return nil, usageError(err)
			}
		}
	}

	// Environment: the AWS CLI's variables, then s3pd's, which win.
	if err := awsEnvSettings(r, getenv, ignoreEndpoints); err != nil {
		return nil, usageError(err)
	}
	known := map[string]bool{envPreset: true, envConfig: true, envSSECKey: true, shard.EnvCount: true}
	for _, name := range testHarnessEnv {
		known[name] = true
	}
	for _, d := range config.All() {
		known[d.Env()] = true
		if v := getenv(d.Env()); v != "" {
			if err := r.Set(d.Name, v, config.Origin{Source: config.SourceEnv, Detail: d.Env()}); err != nil {
				return nil, usageError(err)
			}
		}
	}
	// The environment cannot be listed through Getenv: names come from the
	// process, values through Getenv, so a test's Getenv decides.
	var unknown []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, config.EnvPrefix) && !strings.HasPrefix(name, envTestPrefix) &&
			!known[name] && getenv(name) != "" {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, usageError(&config.SettingError{Setting: strings.ToLower(strings.TrimPrefix(unknown[0], config.EnvPrefix)),
			Value: getenv(unknown[0]), Origin: config.Origin{Source: config.SourceEnv, Detail: unknown[0]},
			Err: fmt.Errorf("unknown variable (known: %s)", strings.Join(slices.Sorted(maps.Keys(known)), ", "))})
	}

	// Flags: the original's aliases first, so the new names win.
	for _, a := range hiddenAliases {
		if v, ok := flagValue(a.flag); ok {
			if err := r.Set(a.setting, v, config.Origin{Source: config.SourceFlag, Detail: "--" + a.flag}); err != nil {
				return nil, usageError(err)
			}
		}
	}
	for _, d := range config.All() {
		if v, ok := flagValue(d.Flag); ok {
			if err := r.Set(d.Name, v, config.Origin{Source: config.SourceFlag, Detail: "--" + d.Flag}); err != nil {
				return nil, usageError(err)
			}
		}
	}

	s, origins, err := r.Resolve()
	if err != nil {
		return nil, usageError(err)
	}
	out.settings, out.origins = s, origins
	return out, nil
}

// credentialsHaveProfile reports whether the AWS credentials file defines
// profile: the AWS CLI accepts a profile defined in either file.
func credentialsHaveProfile(getenv func(string) string, home, profile string) bool {
	path := getenv("AWS_SHARED_CREDENTIALS_FILE")
	if path == "" {
		path = filepath.Join(home, ".aws", "credentials")
	}
	c, err := config.ReadAWSConfig(path, true)
	return err == nil && c.HasProfile(profile)
}

// applyYAML reads settings from a preset or s3pd config file with viper.
// Top-level keys are settings; with profiles, a `profiles:` map whose
// entry named profile overrides them (origin prof). Unknown keys are errors.
func applyYAML(r *config.Resolver, b []byte, name string, profiles bool, profile string, top, prof config.Origin) error {
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
			if _, ok := config.Lookup(parts[0]); ok {
				return &config.SettingError{Setting: parts[0], Value: fmt.Sprint(v.Get(parts[0])), Origin: top, Err: errors.New("want a value, not a map")}
			}
		}
		val, err := yamlText(v.Get(key))
		if err != nil {
			return &config.SettingError{Setting: strings.ReplaceAll(key, "::", "."), Value: fmt.Sprint(v.Get(key)), Origin: top, Err: err}
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
		return &config.SettingError{Setting: "profiles", Value: fmt.Sprint(v.Get("profiles")), Origin: top,
			Err: errors.New("want a map of AWS profile names to settings")}
	}
	for pname, raw := range all {
		m, ok := raw.(map[string]any)
		if !ok && raw != nil {
			return &config.SettingError{Setting: "profiles." + pname, Value: fmt.Sprint(raw), Origin: top,
				Err: errors.New("want a map of settings")}
		}
		// Check every entry, not only the selected one, so typos surface.
		po := config.Origin{Source: config.SourceProfile, Detail: fmt.Sprintf("%s in %s", pname, top.Detail)}
		if strings.EqualFold(pname, profile) {
			po = prof
			entry = m
		}
		for key := range m {
			if _, known := config.Lookup(key); !known {
				return &config.SettingError{Setting: key, Value: fmt.Sprint(m[key]), Origin: po,
					Err: fmt.Errorf("unknown setting (known: %s)", strings.Join(config.Names(), ", "))}
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
			err = &config.SettingError{Setting: key, Value: fmt.Sprint(entry[key]), Origin: prof, Err: err}
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
// its s3 section: region, and endpoint_url (the [services NAME] section's
// s3 block first, as the AWS CLI does, then the profile's own).
func awsProfileSettings(r *config.Resolver, c *config.AWSConfig, profile string, ignoreEndpoints bool) error {
	at := func(what string) config.Origin {
		return config.Origin{Source: config.SourceAWSConfig, Detail: fmt.Sprintf("%s [%s] %s", c.Path, profile, what)}
	}
	if v, ok := c.Get(profile, "region"); ok && v != "" {
		if err := r.Set("region", v, at("region")); err != nil {
			return err
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

// awsEnvSettings reads the AWS CLI's variables for the region and the
// endpoint, the more specific one last so that it wins.
func awsEnvSettings(r *config.Resolver, getenv func(string) string, ignoreEndpoints bool) error {
	vars := []struct{ name, setting string }{
		{"AWS_DEFAULT_REGION", "region"}, {"AWS_REGION", "region"},
	}
	if !ignoreEndpoints {
		vars = append(vars, struct{ name, setting string }{"AWS_ENDPOINT_URL", "endpoint_url"},
			struct{ name, setting string }{"AWS_ENDPOINT_URL_S3", "endpoint_url"})
	}
	for _, v := range vars {
		if val := getenv(v.name); val != "" {
			if err := r.Set(v.setting, val, config.Origin{Source: config.SourceEnv, Detail: v.name}); err != nil {
				return err
			}
		}
	}
	return nil
}

func isTrue(v string) bool { b, _ := strconv.ParseBool(strings.TrimSpace(v)); return b }
