package cmd

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/s3pd/s3pd/pkg/config"
)

func runConfigShow(t *testing.T, e *settingsEnv, args ...string) (string, error) {
	t.Helper()
	f := e.factory()
	out := f.IO.Out.(*bytes.Buffer)
	cmd := NewCmdConfig(f, nil)
	cmd.SetArgs(append([]string{"show"}, args...))
	cmd.SetOut(out)
	cmd.SetErr(f.IO.ErrOut)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.Execute()
	return out.String(), err
}

func TestConfigShowJSON(t *testing.T) {
	e := newSettingsEnv(t)
	e.awsSet(t, "default.s3.max_queue_size", "77")
	e.vars["S3PD_LOG_LEVEL"] = "info"
	out, err := runConfigShow(t, e, "--json", "--preset", "m6in.32xlarge", "--partsize", "32MB")
	if err != nil {
		t.Fatal(err)
	}
	var got shownConfig
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("decode %q: %v", out, err)
	}
	if got.Preset != "m6in.32xlarge" || got.Profile != "default" || got.AWSConfigFile != e.vars["AWS_CONFIG_FILE"] {
		t.Errorf("got preset %q profile %q aws file %q", got.Preset, got.Profile, got.AWSConfigFile)
	}
	if want := "569 requests in flight: from target_bandwidth (preset m6in.32xlarge)"; !strings.HasPrefix(got.Budget, want) {
		t.Errorf("budget %q, want it to start %q", got.Budget, want)
	}
	byName := map[string]shownSetting{}
	for _, s := range got.Settings {
		byName[s.Name] = s
	}
	tests := []struct {
		name   string
		value  any // as JSON decodes it
		source string
	}{
		{"multipart_chunksize", float64(32 << 20), "flag"},
		{"target_bandwidth", float64(50 << 30), "preset"},
		{"max_queue_size", float64(77), "aws-config"},
		{"log_level", "info", "env"},
		{"workers", float64(569), "derived"},
		{"threads", float64(0), "default"},
		{"max_bandwidth", float64(0), "default"},
		{"nics", nil, "default"},
		{"no_sign_request", false, "default"},
	}
	for _, tt := range tests {
		s, ok := byName[tt.name]
		if !ok {
			t.Errorf("%s missing from %s", tt.name, out)
			continue
		}
		if s.Value != tt.value && !(tt.value == nil && s.Value == nil) {
			if _, isSlice := s.Value.([]any); !(tt.value == nil && isSlice) {
				t.Errorf("%s = %#v, want %#v", tt.name, s.Value, tt.value)
			}
		}
		if s.Source != tt.source {
			t.Errorf("%s source = %q, want %q", tt.name, s.Source, tt.source)
		}
	}
	if want := len(config.All()); len(got.Settings) != want {
		t.Errorf("got %d settings, want every one of the %d", len(got.Settings), want)
	}
}

func TestConfigShowText(t *testing.T) {
	e := newSettingsEnv(t)
	file := e.writeFile(t, "home/.config/s3pd/config.yaml", "nics: eth0,eth1\n")
	out, err := runConfigShow(t, e, "--workers", "40", "--threads", "32")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range [][]string{
		{"config file", file},
		{"workers", "40", "flag --workers"},
		{"max_concurrent_requests", "1280", "derived from workers*threads"},
		{"budget:", "1280 requests in flight: workers x threads = 40 x 32"},
		{"multipart_chunksize", "8MiB", "default"},
		{"nics", "eth0,eth1", "file " + file},
		{"region", "-", "default"},
	} {
		if !hasLine(out, line) {
			t.Errorf("no line with %q in:\n%s", line, out)
		}
	}
}

func TestConfigShowBadInput(t *testing.T) {
	e := newSettingsEnv(t)
	_, err := runConfigShow(t, e, "--partsize", "16XB")
	if err == nil || exitCode(err) != ExitUsage || !strings.Contains(err.Error(), "flag --partsize") {
		t.Errorf("got %v, want a usage error naming flag --partsize", err)
	}
}

// hasLine reports whether some line of out holds all fields in order.
func hasLine(out string, fields []string) bool {
	for _, l := range strings.Split(out, "\n") {
		rest, ok := l, true
		for _, f := range fields {
			i := strings.Index(rest, f)
			if i < 0 {
				ok = false
				break
			}
			rest = rest[i+len(f):]
		}
		if ok {
			return true
		}
	}
	return false
}

// TestConfigShowRedactsEndpointUserinfo: an endpoint URL may carry a name
// and password; config show (text and JSON) shows the host, never them.
func TestConfigShowRedactsEndpointUserinfo(t *testing.T) {
	for _, args := range [][]string{
		{"--endpoint-url", "https://AKIDNAME:hunter2@minio.example:9000/base"},
		{"--json", "--endpoint-url", "https://AKIDNAME:hunter2@minio.example:9000/base"},
		{"--endpoint-url", "https://onlyuser-secret@minio.example"},
	} {
		e := newSettingsEnv(t)
		out, err := runConfigShow(t, e, args...)
		if err != nil {
			t.Fatal(err)
		}
		for _, secret := range []string{"hunter2", "AKIDNAME", "onlyuser-secret"} {
			if strings.Contains(out, secret) {
				t.Errorf("config show %v shows %q:\n%s", args, secret, out)
			}
		}
		if !strings.Contains(out, "REDACTED@minio.example") {
			t.Errorf("config show %v does not show the redacted endpoint:\n%s", args, out)
		}
	}
}

// TestConfigShowTLSSettings: ca_bundle and no_verify_ssl are settings,
// read from every source with the precedence of the others, and config
// show names where each came from.
func TestConfigShowTLSSettings(t *testing.T) {
	tests := []struct {
		name       string
		aws, file  string // the AWS config's and the s3pd config file's text
		preset     string // a saved preset "lab", given with --preset
		vars       map[string]string
		args       []string
		wantCA     string
		wantSource string // of ca_bundle
		wantVerify string // no_verify_ssl's value and source
	}{
		{name: "none", wantCA: "-", wantSource: "default", wantVerify: "false default"},
		{name: "aws config", aws: "[default]\nca_bundle = /aws.pem\n", wantCA: "/aws.pem", wantSource: "aws-config"},
		{name: "AWS_CA_BUNDLE over the aws config", aws: "[default]\nca_bundle = /aws.pem\n",
			vars: map[string]string{"AWS_CA_BUNDLE": "/env.pem"}, wantCA: "/env.pem", wantSource: "env AWS_CA_BUNDLE"},
		{name: "s3pd file", file: "ca_bundle: /file.pem\nno_verify_ssl: true\n", wantCA: "/file.pem", wantSource: "file",
			wantVerify: "true file"},
		{name: "S3PD_CA_BUNDLE over AWS_CA_BUNDLE", vars: map[string]string{"AWS_CA_BUNDLE": "/env.pem", "S3PD_CA_BUNDLE": "/s3pd.pem",
			"S3PD_NO_VERIFY_SSL": "true"}, wantCA: "/s3pd.pem", wantSource: "env S3PD_CA_BUNDLE", wantVerify: "true env S3PD_NO_VERIFY_SSL"},
		{name: "a saved preset", preset: "no_verify_ssl: true\nca_bundle: /preset.pem\n", wantCA: "/preset.pem", wantSource: "preset lab",
			wantVerify: "true preset lab"},
		{name: "flags over all", file: "ca_bundle: /file.pem\n", vars: map[string]string{"AWS_CA_BUNDLE": "/env.pem"},
			args: []string{"--ca-bundle", "/flag.pem", "--no-verify-ssl"}, wantCA: "/flag.pem", wantSource: "flag --ca-bundle",
			wantVerify: "true flag --no-verify-ssl"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newSettingsEnv(t)
			if tt.aws != "" {
				e.writeFile(t, "aws-config", tt.aws)
			}
			if tt.file != "" {
				e.writeFile(t, "home/.config/s3pd/config.yaml", tt.file)
			}
			args := tt.args
			if tt.preset != "" {
				e.writeFile(t, "home/.config/s3pd/presets/lab.yaml", tt.preset)
				args = append([]string{"--preset", "lab"}, args...)
			}
			for k, v := range tt.vars {
				e.vars[k] = v
			}
			out, err := runConfigShow(t, e, args...)
			if err != nil {
				t.Fatal(err)
			}
			if !hasLine(out, []string{"ca_bundle", tt.wantCA, tt.wantSource}) {
				t.Errorf("want a line ca_bundle %s %s in:\n%s", tt.wantCA, tt.wantSource, out)
			}
			if tt.wantVerify != "" && !hasLine(out, append([]string{"no_verify_ssl"}, strings.Fields(tt.wantVerify)...)) {
				t.Errorf("want a line no_verify_ssl %s in:\n%s", tt.wantVerify, out)
			}
		})
	}
}
