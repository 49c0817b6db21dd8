package cmd

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/s3pd/s3pd/configs"
	"github.com/s3pd/s3pd/internal/testenv"
	"github.com/s3pd/s3pd/pkg/config"
	"github.com/s3pd/s3pd/pkg/shard"
	"github.com/spf13/pflag"
)

// settingsEnv is a test's environment: HOME and AWS_CONFIG_FILE point into
// a temporary directory, so the user's own files are never read.
type settingsEnv struct {
	dir  string
	vars map[string]string
}

func newSettingsEnv(t *testing.T) *settingsEnv {
	t.Helper()
	dir := t.TempDir()
	return &settingsEnv{dir: dir, vars: map[string]string{
		"HOME":            filepath.Join(dir, "home"),
		"AWS_CONFIG_FILE": filepath.Join(dir, "aws-config"),
	}}
}

func (e *settingsEnv) factory() *Factory {
	return &Factory{
		IO:     &IOStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}},
		Getenv: func(k string) string { return e.vars[k] },
	}
}

// awsSet runs the real `aws configure set` on the test's AWS config file,
// so the file has the layout the AWS CLI writes; it skips without the CLI.
func (e *settingsEnv) awsSet(t *testing.T, pairs ...string) {
	t.Helper()
	aws, err := exec.LookPath("aws")
	if err != nil {
		testenv.Unavailable(t, "the AWS CLI (aws) is not installed (.ci/run installs it)")
	}
	for i := 0; i+1 < len(pairs); i += 2 {
		cmd := exec.Command(aws, "configure", "set", pairs[i], pairs[i+1])
		cmd.Env = append(os.Environ(), "AWS_CONFIG_FILE="+e.vars["AWS_CONFIG_FILE"],
			"AWS_SHARED_CREDENTIALS_FILE="+filepath.Join(e.dir, "aws-credentials"))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("aws configure set %s %s: %v: %s", pairs[i], pairs[i+1], err, out)
		}
	}
}

// writeFile writes text at path (relative to the test directory) and
// returns its absolute path.
func (e *settingsEnv) writeFile(t *testing.T, path, text string) string {
	t.Helper()
	if !filepath.IsAbs(path) {
		path = filepath.Join(e.dir, path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func (e *settingsEnv) load(t *testing.T, args ...string) (config.Settings, *config.Origins, error) {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	addSettingsFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse %v: %v", args, err)
	}
	return loadSettings(e.factory(), fs)
}

// want is one expected setting: its formatted value and its origin.
type want struct{ name, value, origin string }

func checkSettings(t *testing.T, s config.Settings, o *config.Origins, wants []want) {
	t.Helper()
	for _, w := range wants {
		if got := s.Format(w.name); got != w.value {
			t.Errorf("%s = %q, want %q", w.name, got, w.value)
		}
		if got := o.Get(w.name).String(); got != w.origin {
			t.Errorf("%s origin = %q, want %q", w.name, got, w.origin)
		}
	}
}

func TestLoadSettingsPrecedence(t *testing.T) {
	e := newSettingsEnv(t)
	e.awsSet(t,
		"default.s3.multipart_chunksize", "16MB",
		"default.s3.max_queue_size", "50",
		"default.s3.max_bandwidth", "1GB/s",
		"default.s3.use_accelerate_endpoint", "true", // not s3pd's: ignored
		"default.region", "us-west-2", // not in the s3 section: ignored
		"profile.dev.s3.multipart_chunksize", "32MB",
		"profile.dev.s3.max_concurrent_requests", "20",
	)
	awsDefault := "aws-config " + e.vars["AWS_CONFIG_FILE"] + " [default] s3"
	awsDev := "aws-config " + e.vars["AWS_CONFIG_FILE"] + " [dev] s3"
	file := e.writeFile(t, "s3pd.yaml", `
multipart_chunksize: 4MB
log_level: info
nics: [eth0, eth1]
profiles:
  dev:
    workers: 7
    log_format: json
  other:
    workers: 9
`)
	tests := []struct {
		name  string
		env   map[string]string
		args  []string
		wants []want
	}{
		{"aws default profile", nil, nil, []want{
			{"multipart_chunksize", "16MiB", awsDefault},
			{"max_queue_size", "50", awsDefault},
			{"max_bandwidth", "1GiB/s", awsDefault},
			{"workers", "256", "default"},
			// The profile's region, read as the AWS CLI reads it.
			{"region", "us-west-2", "aws-config " + e.vars["AWS_CONFIG_FILE"] + " [default] region"},
		}},
		{"AWS_PROFILE selects the section", map[string]string{"AWS_PROFILE": "dev"}, nil, []want{
			{"multipart_chunksize", "32MiB", awsDev},
			{"max_queue_size", "1000", "default"},
			// The budget; it derives neither workers nor threads.
			{"max_concurrent_requests", "20", awsDev},
			{"workers", "256", "default"},
			{"threads", "0", "default"},
		}},
		{"--profile beats AWS_PROFILE", map[string]string{"AWS_PROFILE": "missing"}, []string{"--profile", "dev"}, []want{
			{"multipart_chunksize", "32MiB", awsDev},
		}},
		{"preset beats aws config", nil, []string{"--preset", "m5n.24xlarge"}, []want{
			{"multipart_chunksize", "16MiB", "preset m5n.24xlarge"},
			{"workers", "40", "preset m5n.24xlarge"},
			{"max_queue_size", "50", awsDefault},
			{"max_concurrent_requests", "1280", "derived from workers*threads"},
		}},
		{"S3PD_PRESET", map[string]string{"S3PD_PRESET": "dl1.24xlarge"}, nil, []want{
			{"nics", "en0,en1,en2,en3", "preset dl1.24xlarge"},
		}},
		{"file beats preset", nil, []string{"--preset", "m5n.24xlarge", "--config", file}, []want{
			{"multipart_chunksize", "4MiB", "file " + file},
			{"workers", "40", "preset m5n.24xlarge"},
			{"log_level", "info", "file " + file},
			{"nics", "eth0,eth1", "file " + file},
		}},
		{"file profile entry beats file top level", map[string]string{"AWS_PROFILE": "dev"}, []string{"--config", file}, []want{
			{"workers", "7", "profile dev in " + file},
			{"log_format", "json", "profile dev in " + file},
			{"multipart_chunksize", "4MiB", "file " + file},
		}},
		{"S3PD_CONFIG", map[string]string{"S3PD_CONFIG": file}, nil, []want{
			{"multipart_chunksize", "4MiB", "file " + file},
			{"workers", "256", "default"},
		}},
		{"env beats file", map[string]string{"S3PD_MULTIPART_CHUNKSIZE": "2MB", "S3PD_NICS": "ib0"}, []string{"--config", file}, []want{
			{"multipart_chunksize", "2MiB", "env S3PD_MULTIPART_CHUNKSIZE"},
			{"nics", "ib0", "env S3PD_NICS"},
			{"log_level", "info", "file " + file},
		}},
		{"flag beats env", map[string]string{"S3PD_MULTIPART_CHUNKSIZE": "2MB"}, []string{"--partsize", "1MB"}, []want{
			{"multipart_chunksize", "1MiB", "flag --partsize"},
		}},
		{"original's byte counts", nil, []string{"--partsize", "16777216", "--workers=40", "--threads=32"}, []want{
			{"multipart_chunksize", "16MiB", "flag --partsize"},
			{"max_concurrent_requests", "1280", "derived from workers*threads"},
		}},
		{"hidden aliases", nil, []string{"--maxlist", "5", "--loglevel", "debug"}, []want{
			{"max_queue_size", "5", "flag --maxlist"},
			{"log_level", "debug", "flag --loglevel"},
		}},
		{"new names beat aliases", nil, []string{"--maxlist", "5", "--max-queue-size", "6"}, []want{
			{"max_queue_size", "6", "flag --max-queue-size"},
		}},
		{"repeated --nics add up", nil, []string{"--nics", "eth0", "--nics", "eth1,eth2"}, []want{
			{"nics", "eth0,eth1,eth2", "flag --nics"},
		}},
		{"bare --no-sign-request", nil, []string{"--no-sign-request"}, []want{
			{"no_sign_request", "true", "flag --no-sign-request"},
		}},
		// 10Gb/s, capped by the AWS config's max_bandwidth of 1GB/s:
		// ceil(1024MiB / 90MiB) = 12 connections.
		{"target bandwidth tunes concurrency", nil, []string{"--target-bandwidth", "10Gb/s"}, []want{
			{"max_concurrent_requests", "12", "derived from target_bandwidth"},
			{"threads", "0", "default"},
			{"workers", "256", "default"},
		}},
		// Without the cap: ceil(1280MiB / 90MiB) = 15.
		{"target bandwidth without cap", nil, []string{"--target-bandwidth", "10Gb/s", "--max-bandwidth", "0"}, []want{
			{"max_concurrent_requests", "15", "derived from target_bandwidth"},
			{"max_bandwidth", "0", "flag --max-bandwidth"},
		}},
		{"classic client ignores target bandwidth", nil, []string{"--target-bandwidth", "10Gb/s", "--preferred-transfer-client", "classic"}, []want{
			{"max_concurrent_requests", "256", "default"},
			{"workers", "256", "default"},
		}},
		// A rate's "/s" is optional: the unit suffix means the same.
		{"rates without /s", nil, []string{"--target-bandwidth", "10Gb", "--max-bandwidth", "100MB"}, []want{
			{"target_bandwidth", "1280MiB/s", "flag --target-bandwidth"},
			{"max_bandwidth", "100MiB/s", "flag --max-bandwidth"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			saved := e.vars
			e.vars = map[string]string{}
			for k, v := range saved {
				e.vars[k] = v
			}
			for k, v := range tt.env {
				e.vars[k] = v
			}
			defer func() { e.vars = saved }()
			s, o, err := e.load(t, tt.args...)
			if err != nil {
				t.Fatalf("loadSettings: %v", err)
			}
			checkSettings(t, s, o, tt.wants)
		})
	}
}

func TestLoadSettingsDefaultFileLocations(t *testing.T) {
	tests := []struct{ name, xdg, path string }{
		{"HOME", "", "home/.config/s3pd/config.yaml"},
		{"XDG_CONFIG_HOME", "xdg", "xdg/s3pd/config.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newSettingsEnv(t)
			if tt.xdg != "" {
				e.vars["XDG_CONFIG_HOME"] = filepath.Join(e.dir, tt.xdg)
			}
			path := e.writeFile(t, tt.path, "threads: 3\n")
			s, o, err := e.load(t)
			if err != nil {
				t.Fatal(err)
			}
			checkSettings(t, s, o, []want{{"threads", "3", "file " + path}})
		})
	}
}

func TestLoadSettingsWithoutAnyFile(t *testing.T) {
	e := newSettingsEnv(t)
	s, o, err := e.load(t)
	if err != nil {
		t.Fatal(err)
	}
	def := config.Defaults()
	for _, name := range config.Names() {
		if got, want := s.Format(name), def.Format(name); got != want {
			t.Errorf("%s = %q, want the default %q", name, got, want)
		}
		if got := o.Get(name).Source; got != config.SourceDefault {
			t.Errorf("%s origin = %s, want default", name, got)
		}
	}
}

func TestLoadSettingsProfileOnlyInCredentials(t *testing.T) {
	e := newSettingsEnv(t)
	e.vars["AWS_SHARED_CREDENTIALS_FILE"] = e.writeFile(t, "creds", "[ci]\naws_access_key_id = AKIA\n")
	s, o, err := e.load(t, "--profile", "ci")
	if err != nil {
		t.Fatalf("a profile defined only in the credentials file: %v", err)
	}
	checkSettings(t, s, o, []want{{"multipart_chunksize", "8MiB", "default"}})
	if s.Profile != "ci" {
		t.Errorf("Profile = %q, want ci", s.Profile)
	}
}

func TestLoadSettingsErrors(t *testing.T) {
	tests := []struct {
		name string
		aws  []string // aws configure set pairs
		file string   // s3pd config file text, passed with --config
		env  map[string]string
		args []string
		want []string // substrings of the message
		hide []string // what the message must not show (it may be a secret)
	}{
		{name: "bad size in env", env: map[string]string{"S3PD_MULTIPART_CHUNKSIZE": "16XB"},
			want: []string{"multipart_chunksize", `"16XB"`, "env S3PD_MULTIPART_CHUNKSIZE", "invalid size"}},
		{name: "zero workers flag", args: []string{"--workers", "0"},
			want: []string{"workers", `"0"`, "flag --workers"}},
		{name: "negative workers flag", args: []string{"--workers=-4"},
			want: []string{"workers", `"-4"`, "flag --workers"}},
		{name: "negative threads in env", env: map[string]string{"S3PD_THREADS": "-1"},
			want: []string{"threads", `"-1"`, "env S3PD_THREADS"}},
		{name: "bad size in aws config", aws: []string{"default.s3.multipart_chunksize", "16XB"},
			want: []string{"multipart_chunksize", `"16XB"`, "aws-config", "[default] s3"}},
		{name: "bad rate in aws config", aws: []string{"default.s3.target_bandwidth", "50GB/h"},
			want: []string{"target_bandwidth", `"50GB/h"`, "aws-config", "invalid rate"}},
		{name: "unknown key in file", file: "colour: blue\n",
			want: []string{"colour", "file ", "unknown setting"}, hide: []string{"blue"}},
		{name: "unknown key in file profile", file: "profiles:\n  dev:\n    colour: blue\n",
			want: []string{"colour", "profile dev in", "unknown setting"}, hide: []string{"blue"}},
		{name: "typo of a key in file", file: "max_concurent_requests: 8\n",
			want: []string{"max_concurent_requests", "unknown setting: did you mean max_concurrent_requests?"}},
		{name: "typo of a key in file profile", file: "profiles:\n  dev:\n    partsize: 8MiB\n",
			want: []string{"partsize", "profile dev in", "did you mean"}},
		{name: "secret under a wrong key", file: "aws_secret_access_key: wJalrXUtnFEMI/K7MDENG\n",
			want: []string{"aws_secret_access_key", "unknown setting"}, hide: []string{"wJalrXUtnFEMI"}},
		{name: "endpoint with a password and a bad scheme", env: map[string]string{"S3PD_ENDPOINT_URL": "ftp://ak:hunter2@minio.example"},
			want: []string{"endpoint_url", "env S3PD_ENDPOINT_URL", "REDACTED@minio.example"}, hide: []string{"hunter2", "ak:"}},
		{name: "unparsable endpoint with a password", args: []string{"--endpoint-url", "http://ak:hunter2@[::1"},
			want: []string{"endpoint_url", "flag --endpoint-url"}, hide: []string{"hunter2"}},
		{name: "bad value in file profile", file: "profiles:\n  default:\n    workers: 0\n",
			want: []string{"workers", `"0"`, "profile default in"}},
		{name: "map for a value", file: "workers:\n  a: 1\n",
			want: []string{"workers", "file ", "not a map"}},
		{name: "malformed file", file: "workers: [1\n",
			want: []string{"malformed YAML"}},
		{name: "missing --profile", args: []string{"--profile", "nope"},
			want: []string{"profile", `"nope"`, "flag --profile", "no such profile"}},
		{name: "missing AWS_PROFILE", env: map[string]string{"AWS_PROFILE": "nope"},
			want: []string{"profile", `"nope"`, "env AWS_PROFILE", "no such profile"}},
		{name: "missing preset", args: []string{"--preset", "z9.huge"},
			want: []string{"preset", `"z9.huge"`, "flag --preset", "no such preset", "m5n.24xlarge"}},
		{name: "missing S3PD_PRESET", env: map[string]string{"S3PD_PRESET": "z9.huge"},
			want: []string{"preset", `"z9.huge"`, "env S3PD_PRESET"}},
		{name: "missing --config file", args: []string{"--config", "/nonexistent/s3pd.yaml"},
			want: []string{"config", "/nonexistent/s3pd.yaml", "flag --config"}},
		{name: "bad enum flag", args: []string{"--preferred-transfer-client", "turbo"},
			want: []string{"preferred_transfer_client", `"turbo"`, "flag --preferred-transfer-client"}},
		{name: "bad alias flag", args: []string{"--maxlist", "0"},
			want: []string{"max_queue_size", `"0"`, "flag --maxlist"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newSettingsEnv(t)
			e.awsSet(t, tt.aws...)
			for k, v := range tt.env {
				e.vars[k] = v
			}
			args := tt.args
			if tt.file != "" {
				args = append(args, "--config", e.writeFile(t, "s3pd.yaml", tt.file))
			}
			_, _, err := e.load(t, args...)
			if err == nil {
				t.Fatalf("got no error, want one containing %q", tt.want)
			}
			if got := exitCode(err); got != ExitUsage {
				t.Errorf("exit code %d, want %d", got, ExitUsage)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			for _, h := range tt.hide {
				if strings.Contains(err.Error(), h) {
					t.Errorf("error %q shows %q", err, h)
				}
			}
		})
	}
}

func TestLoadSettingsMalformedAWSConfig(t *testing.T) {
	e := newSettingsEnv(t)
	path := e.writeFile(t, "aws-config", "[default]\ns3 =\n  multipart_chunksize\n")
	_, _, err := e.load(t)
	if err == nil || exitCode(err) != ExitUsage || !strings.Contains(err.Error(), path) {
		t.Errorf("got %v, want a usage error naming %s", err, path)
	}
}

// TestLoadSettingsMalformedAWSConfigHidesTheLine: a malformed line is often
// a secret pasted without its key; the error names the file and the line
// number, never the line.
func TestLoadSettingsMalformedAWSConfigHidesTheLine(t *testing.T) {
	for name, text := range map[string]string{
		"no key":         "[default]\nregion = us-east-1\nwJalrXUtnFEMIK7MDENGbPxRfiCY\n",
		"before section": "wJalrXUtnFEMIK7MDENGbPxRfiCY\n[default]\n",
		"empty key":      "[default]\n = wJalrXUtnFEMIK7MDENGbPxRfiCY\n",
		"bad header":     "[wJalrXUtnFEMIK7MDENGbPxRfiCY\n",
	} {
		t.Run(name, func(t *testing.T) {
			e := newSettingsEnv(t)
			path := e.writeFile(t, "aws-config", text)
			_, _, err := e.load(t)
			if err == nil || exitCode(err) != ExitUsage || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "line ") {
				t.Fatalf("got %v, want a usage error naming %s and a line", err, path)
			}
			if strings.Contains(err.Error(), "wJalrXUtnFEMI") {
				t.Errorf("error %q shows the line's secret", err)
			}
		})
	}
}

func TestLoadSettingsUnknownEnv(t *testing.T) {
	e := newSettingsEnv(t)
	t.Setenv("S3PD_WORKER", "wJalrXUtnFEMI")
	e.vars["S3PD_WORKER"] = "wJalrXUtnFEMI"
	_, _, err := e.load(t)
	if err == nil || exitCode(err) != ExitUsage {
		t.Fatalf("got %v, want a usage error", err)
	}
	for _, w := range []string{"worker", "env S3PD_WORKER", "unknown variable", "S3PD_WORKERS"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}
	if strings.Contains(err.Error(), "wJalrXUtnFEMI") {
		t.Errorf("error %q echoes the variable's value", err)
	}
}

// TestLoadSettingsKnowsOnlyWhatCmdReads: a variable cmd reads itself
// is accepted; a test harness's own (S3PD_NETNS_REQUIRED, S3PD_TEST_*)
// is not s3pd's and is refused as any unknown one: a harness keeps them
// out of the environment of the s3pd it runs.
func TestLoadSettingsKnowsOnlyWhatCmdReads(t *testing.T) {
	for _, tt := range []struct {
		name string
		ok   bool
	}{
		{envRefuseDirect, true},
		{shard.EnvCount, true},
		{"S3PD_TEST_ANYTHING", false},
		{"S3PD_NETNS_REQUIRED", false},
	} {
		e := newSettingsEnv(t)
		t.Setenv(tt.name, "1")
		e.vars[tt.name] = "1"
		if _, _, err := e.load(t); (err == nil) != tt.ok || err != nil && !strings.Contains(err.Error(), "unknown variable") {
			t.Errorf("%s set: error %v, want accepted %v", tt.name, err, tt.ok)
		}
	}
}

// TestPresets loads every file in configs/, read from disk so that a file
// the embedding misses fails too.
func TestPresets(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("..", "configs", "*.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no presets in ../configs: %v", err)
	}
	var names []string
	for _, p := range paths {
		name := strings.TrimSuffix(filepath.Base(p), ".yaml")
		names = append(names, name)
		t.Run(name, func(t *testing.T) {
			e := newSettingsEnv(t)
			s, o, err := e.load(t, "--preset", name)
			if err != nil {
				t.Fatalf("load preset %s: %v", name, err)
			}
			set := 0
			for _, n := range config.Names() {
				if o.Get(n).Source == config.SourcePreset {
					set++
				}
			}
			if set == 0 {
				t.Errorf("preset %s sets nothing", name)
			}
			if s.PartSize < 1<<20 {
				t.Errorf("preset %s: part size %d, want at least 1MiB", name, s.PartSize)
			}
		})
	}
	if got, want := strings.Join(configs.Names(), ","), strings.Join(names, ","); got != want {
		t.Errorf("embedded presets %s, want the files %s", got, want)
	}
}

func TestPresetContents(t *testing.T) {
	tests := []struct {
		preset string
		wants  []want
	}{
		{"m5n.24xlarge", []want{{"workers", "40", "preset m5n.24xlarge"}, {"threads", "32", "preset m5n.24xlarge"}, {"multipart_chunksize", "16MiB", "preset m5n.24xlarge"}}},
		{"m6in.32xlarge", []want{
			{"multipart_chunksize", "16MiB", "preset m6in.32xlarge"},
			{"target_bandwidth", "50GiB/s", "preset m6in.32xlarge"},
			{"preferred_transfer_client", "crt", "preset m6in.32xlarge"},
			{"max_concurrent_requests", "569", "derived from target_bandwidth"},
			{"workers", "569", "derived from target_bandwidth"},
		}},
		{"dl1.24xlarge", []want{{"nics", "en0,en1,en2,en3", "preset dl1.24xlarge"}}},
		{"p4d.24xlarge", []want{{"nics", "en0,en1,en2,en3", "preset p4d.24xlarge"}}},
	}
	for _, tt := range tests {
		e := newSettingsEnv(t)
		s, o, err := e.load(t, "--preset", tt.preset)
		if err != nil {
			t.Fatal(err)
		}
		checkSettings(t, s, o, tt.wants)
	}
	// The default preset spells out the built-in defaults.
	e := newSettingsEnv(t)
	s, _, err := e.load(t, "--preset", "default")
	if err != nil {
		t.Fatal(err)
	}
	def := config.Defaults()
	for _, name := range config.Names() {
		if got, want := s.Format(name), def.Format(name); got != want {
			t.Errorf("preset default: %s = %q, want the built-in %q", name, got, want)
		}
	}
}

func TestSettingsFlagsHelp(t *testing.T) {
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	addSettingsFlags(fs)
	usage := fs.FlagUsages()
	for _, w := range []string{"--partsize size", "--max-bandwidth rate", "--workers int", "(default 8MiB)", "--no-sign-request", "--preset string"} {
		if !strings.Contains(usage, w) {
			t.Errorf("flag usage lacks %q:\n%s", w, usage)
		}
	}
	for _, hidden := range []string{"--loglevel", "--maxlist"} {
		if strings.Contains(usage, hidden) {
			t.Errorf("hidden alias %s shows in usage", hidden)
		}
	}
	if err := fs.Parse([]string{"--no-sign-request", "--partsize", "16XB"}); err != nil {
		t.Errorf("parsing defers validation to loadSettings, got %v", err)
	}
	var se *config.SettingError
	_, _, err := loadSettings(&Factory{Getenv: func(string) string { return "" }}, fs)
	if !errors.As(err, &se) || se.Setting != "multipart_chunksize" {
		t.Errorf("got %v, want a SettingError for multipart_chunksize", err)
	}
}
