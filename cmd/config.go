package cmd

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/s3pd/s3pd/pkg/config"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// NewCmdConfig builds `s3pd config`, whose `show` subcommand prints every
// effective setting and where it came from. runF, when set, runs instead
// of showSettings with the parsed options (tests).
func NewCmdConfig(f *Factory, runF func(*configShowOptions) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Inspect s3pd's configuration",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newCmdConfigShow(f, runF))
	return cmd
}

// configShowOptions are config show's flags.
type configShowOptions struct {
	// flags are the command's flags, for the settings they set.
	flags  *pflag.FlagSet
	asJSON bool
	// url, when given, names a bucket to say what kind it is.
	url string
}

func newCmdConfigShow(f *Factory, runF func(*configShowOptions) error) *cobra.Command {
	opts := &configShowOptions{}
	cmd := &cobra.Command{
		Use:   "show [flags] [s3://bucket]",
		Short: "Print every effective setting and where it came from",
		// The words other tools use for it: "did you mean show?".
		SuggestFor: []string{"list", "ls", "file", "view", "dump", "print", "get"},
		Long: `Print every effective setting and its origin: default, aws-config (the s3
section of the AWS profile), preset, file (the s3pd config file), profile
(its profiles entry for the AWS profile), env (S3PD_*), flag, or derived
(computed from max_concurrent_requests or target_bandwidth).

Takes the same settings flags as get and bench, so
  s3pd config show --preset m6in.32xlarge --partsize 32MB
shows what a get with those flags would run with. With an s3:// URL it
also says what kind of bucket it names (a directory bucket, S3 Express
One Zone, and its zonal endpoint) and sends no request. See docs/CONFIG.md.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.flags = cmd.Flags()
			if len(args) == 1 {
				opts.url = args[0]
			}
			if runF != nil {
				return runF(opts)
			}
			return showSettings(f, opts)
		},
	}
	addSettingsFlags(cmd.Flags())
	cmd.Flags().BoolVar(&opts.asJSON, "json", false, "print JSON")
	return cmd
}

// showSettings loads the settings as a transfer would and prints them.
func showSettings(f *Factory, opts *configShowOptions) error {
	l, err := resolveSettings(f, opts.flags)
	if err != nil {
		return err
	}
	var b *shownBucket
	if opts.url != "" {
		if b, err = showBucket(opts.url, l.Settings); err != nil {
			return err
		}
	}
	if opts.asJSON {
		return writeConfigJSON(f, l, b)
	}
	return writeConfigText(f, l, b)
}

// shownSetting is one line of `config show --json`.
type shownSetting struct {
	Name   string `json:"name"`
	Value  any    `json:"value"`
	Text   string `json:"text"`
	Source string `json:"source"`
	Detail string `json:"detail,omitempty"`
	// Overridden says which value from a lower-precedence source
	// derivation replaced, and why.
	Overridden string `json:"overridden,omitempty"`
}

// shownConfig is the document `config show --json` prints.
type shownConfig struct {
	Profile       string `json:"profile"`
	AWSConfigFile string `json:"aws_config_file"`
	Preset        string `json:"preset,omitempty"`
	ConfigFile    string `json:"config_file,omitempty"`
	// Credentials says where requests' credentials come from.
	Credentials shownCredentials `json:"credentials"`
	// Budget names the rule that set the requests in flight overall.
	Budget   string         `json:"budget"`
	Settings []shownSetting `json:"settings"`
	// Bucket is what kind of bucket the URL names, when one is given.
	Bucket *shownBucket `json:"bucket,omitempty"`
}

func showConfig(f *Factory, l *config.Loaded) shownConfig {
	out := shownConfig{Profile: l.Profile, AWSConfigFile: l.AWSConfigFile, Preset: l.Preset, ConfigFile: l.ConfigFile,
		Credentials: credentialSource(f.Getenv, l), Budget: l.Origins.Budget()}
	for _, name := range config.Names() {
		or := l.Origins.Get(name)
		value, text := l.Settings.Value(name), l.Settings.Format(name)
		if def, _ := config.Lookup(name); def.Syntax == "url" && text != "" {
			// An endpoint may carry a name and password; show neither.
			text, _ = config.RedactURL(text)
			value = text
		}
		out.Settings = append(out.Settings, shownSetting{
			Name: name, Value: value, Text: text,
			Source: string(or.Source), Detail: or.Detail, Overridden: l.Origins.Overridden(name),
		})
	}
	return out
}

func writeConfigJSON(f *Factory, l *config.Loaded, b *shownBucket) error {
	enc := json.NewEncoder(f.IO.Out)
	enc.SetIndent("", "  ")
	sc := showConfig(f, l)
	sc.Bucket = b
	return enc.Encode(sc)
}

func writeConfigText(f *Factory, l *config.Loaded, b *shownBucket) error {
	sc := showConfig(f, l)
	out := f.IO.Out
	fmt.Fprintf(out, "profile: %s (%s)\n", sc.Profile, l.Origins.Get("profile"))
	fmt.Fprintf(out, "aws config file: %s\n", sc.AWSConfigFile)
	if sc.Preset != "" {
		fmt.Fprintf(out, "preset: %s (%s)\n", sc.Preset, l.PresetOrigin)
	}
	if sc.ConfigFile != "" {
		fmt.Fprintf(out, "config file: %s\n", sc.ConfigFile)
	}
	// Where requests go and as whom, as `aws configure list` says it.
	if l.Settings.Region != "" {
		fmt.Fprintf(out, "region: %s (%s)\n", l.Settings.Region, l.Origins.Get("region"))
	} else {
		fmt.Fprintln(out, "region: not set: detected from the bucket")
	}
	if ep := l.Settings.EndpointURL; ep != "" {
		ep, _ = config.RedactURL(ep)
		fmt.Fprintf(out, "endpoint: %s (%s)\n", ep, l.Origins.Get("endpoint_url"))
	} else {
		fmt.Fprintln(out, "endpoint: AWS (default)")
	}
	if b != nil {
		fmt.Fprintln(out, b.line())
	}
	c := sc.Credentials
	creds := c.Source
	if c.Location != "" {
		creds += " (" + c.Location + ")"
	}
	if c.AccessKey != "" {
		creds += ", access key " + c.AccessKey
	}
	fmt.Fprintf(out, "credentials: %s\n", creds)
	fmt.Fprintf(out, "budget: %s\n", sc.Budget)
	fmt.Fprintln(out)
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "SETTING\tVALUE\tORIGIN")
	for _, s := range sc.Settings {
		text := s.Text
		if text == "" {
			text = "-"
		}
		or := config.Origin{Source: config.SourceKind(s.Source), Detail: s.Detail}
		mark := ""
		if s.Overridden != "" {
			mark = " (overridden)"
		}
		fmt.Fprintf(w, "%s\t%s\t%s%s\n", s.Name, text, or, mark)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	for _, why := range l.Origins.Warnings() {
		fmt.Fprintln(out, "overridden: "+why)
	}
	return nil
}
