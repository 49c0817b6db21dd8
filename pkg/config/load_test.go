package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestLoadPrecedence: every source in turn, each above the one before,
// with the origin of each value; flags given as text, as cmd registers
// them.
func TestLoadPrecedence(t *testing.T) {
	dir := t.TempDir()
	aws := filepath.Join(dir, "aws")
	os.WriteFile(aws, []byte("[default]\nregion = eu-west-1\ns3 =\n  multipart_chunksize = 16MB\n  max_queue_size = 50\n  max_concurrent_requests = 20\n"), 0o644)
	file := filepath.Join(dir, "s3pd.yaml")
	os.WriteFile(file, []byte("max_queue_size: 60\nlog_level: info\nprofiles:\n  default:\n    log_format: json\n"), 0o644)
	env := map[string]string{"HOME": dir, "AWS_CONFIG_FILE": aws, "S3PD_CONFIG": file, "S3PD_LOG_LEVEL": "error", "S3PD_PRESET": "p"}
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.String("workers", "", "")
	fs.String("loglevel", "", "")
	if err := fs.Parse([]string{"--workers", "4", "--loglevel", "debug"}); err != nil {
		t.Fatal(err)
	}
	l, err := Load(Sources{
		Getenv:  func(k string) string { return env[k] },
		Environ: func() []string { return nil },
		Flags:   fs,
		Preset: func(name string) ([]byte, error) {
			return []byte("multipart_chunksize: 32MB\nthreads: 2\n"), nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct{ name, value, origin string }{
		{"region", "eu-west-1", "aws-config " + aws + " [default] region"},
		{"multipart_chunksize", "32MiB", "preset p"},
		{"max_queue_size", "60", "file " + file},
		{"log_format", "json", "profile default in " + file},
		{"log_level", "debug", "flag --loglevel"},
		{"workers", "4", "flag --workers"},
		{"threads", "2", "preset p"},
		// workers (flag) and threads (preset) outrank the AWS config's 20.
		{"max_concurrent_requests", "8", "derived from workers*threads"},
	} {
		if got, or := l.Settings.Format(w.name), l.Origins.Get(w.name).String(); got != w.value || or != w.origin {
			t.Errorf("%s = %s from %s, want %s from %s", w.name, got, or, w.value, w.origin)
		}
	}
	if l.Preset != "p" || l.ConfigFile != file || l.Profile != "default" {
		t.Errorf("loaded preset %q file %q profile %q", l.Preset, l.ConfigFile, l.Profile)
	}
	if !strings.Contains(l.Origins.Overridden("max_concurrent_requests"), "20 from aws-config") {
		t.Errorf("the AWS config's max_concurrent_requests is not marked overridden: %q", l.Origins.Overridden("max_concurrent_requests"))
	}
}

// TestLoadRefuses: a bad value names the setting, the value and where it
// came from; an unknown S3PD_ variable is a typo.
func TestLoadRefuses(t *testing.T) {
	for _, tt := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"S3PD_WORKERS": "many"}, `setting workers = "many" from env S3PD_WORKERS`},
		{map[string]string{"S3PD_WROKERS": "4"}, "unknown variable"},
		{map[string]string{"S3PD_PRESET": "none"}, "setting preset"},
	} {
		_, err := Load(Sources{
			Getenv:  func(k string) string { return tt.env[k] },
			Environ: func() []string { return []string{"S3PD_WROKERS=4"} },
			Preset:  func(string) ([]byte, error) { return nil, errors.New("no such preset") },
		})
		var se *SettingError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("env %v: error %v, want a *SettingError containing %q", tt.env, err, tt.want)
		}
	}
}
