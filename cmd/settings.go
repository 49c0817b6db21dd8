package cmd

import (
	"slices"
	"strings"

	"github.com/s3pd/s3pd/configs"
	"github.com/s3pd/s3pd/pkg/config"
	"github.com/s3pd/s3pd/pkg/shard"
	"github.com/spf13/pflag"
)

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
	for _, a := range config.Aliases {
		d, _ := config.Lookup(a.Setting)
		fs.Var(&settingFlag{syntax: d.Syntax}, a.Flag, "alias of --"+d.Flag)
		_ = fs.MarkHidden(a.Flag)
	}
	fs.String(config.FlagProfile, "", "AWS profile whose s3 settings and credentials to use (default: AWS_PROFILE, else default)")
	fs.String(config.FlagPreset, "", "preset settings for a machine: "+strings.Join(configs.Names(), ", ")+", or one saved by bench --sweep --save-preset (env S3PD_PRESET)")
	fs.String(config.FlagConfig, "", "s3pd config file (env S3PD_CONFIG; default ~/.config/s3pd/config.yaml if present)")
}

// connectionSettings are the settings a listing uses: where the server
// is, how to sign, what to log.
var connectionSettings = []string{"region", "endpoint_url", "addressing_style", "no_sign_request", "ca_bundle", "no_verify_ssl", "log_level", "log_format"}

// hideTransferSettings hides from a listing command's help the settings
// only a transfer uses (--workers, --partsize, ...): it still accepts
// them, as a preset or config file sets them for every command.
func hideTransferSettings(fs *pflag.FlagSet) {
	for _, d := range config.All() {
		if !slices.Contains(connectionSettings, d.Name) {
			_ = fs.MarkHidden(d.Flag) // registered by addSettingsFlags
		}
	}
}

// loadSettings resolves the effective settings (config.Load: defaults,
// the AWS profile's s3 section, a preset, the s3pd config file, S3PD_*
// variables, flags, lowest first). The origins carry the warnings of
// values overridden, which startRun says. A bad value is a usage error
// (exit 2) naming the setting, the value and its source.
func loadSettings(f *Factory, fs *pflag.FlagSet) (config.Settings, *config.Origins, error) {
	l, err := resolveSettings(f, fs)
	if err != nil {
		return config.Settings{}, nil, err
	}
	return l.Settings, l.Origins, nil
}

// envFleetService names the headless Service of a Kubernetes fleet for
// --fleet auto (fleet.EnvService, read by fleet.Discover).
const envFleetService = "S3PD_FLEET_SERVICE"

// knownEnv are the S3PD_* variables cmd reads itself, besides the
// settings': the settings refuse any other as a typo.
func knownEnv() []string {
	return []string{envSSECKey, shard.EnvCount, envFleetService, envFleetToken, envRefuseDirect}
}

// resolveSettings loads the settings with the sources they came from.
func resolveSettings(f *Factory, fs *pflag.FlagSet) (*config.Loaded, error) {
	getenv := f.getenv()
	l, err := config.Load(config.Sources{
		Getenv:   getenv,
		Flags:    fs,
		Preset:   func(name string) ([]byte, error) { return readPreset(getenv, name) },
		KnownEnv: knownEnv(),
	})
	if err != nil {
		return nil, usageError(err)
	}
	return l, nil
}
