package e2e

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/s3pd/s3pd/pkg/s3emu"
)

// TestSecretCanaries puts a secret in each place a user may put one (the
// SSE-C key on the command line, in a file and in the environment; an
// endpoint URL's password; the AWS config and credentials files; a
// misplaced setting) and runs s3pd so that it fails, at debug level: no
// output may contain the secret (nor the SSE-C key's base64, which its
// header carries).
func TestSecretCanaries(t *testing.T) {
	const sseKey = "ssec-canary-0123456789abcdefghij" // 32 bytes
	short := "ssec-canary-short"
	s := emuStore(t, s3emu.Options{Dataset: "f:1:1MiB", Faults: s3emu.NewFaults(
		s3emu.Rule{Key: "f/*", Times: -1, Action: s3emu.Status{Code: 403}})})
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	keyFile, shortFile := write("key", sseKey), write("short", short)
	endpointWithPassword := strings.Replace(s.endpoint, "://", "://AKIDCANARY:pw-canary-77e1@", 1)
	get := func(extra ...string) []string {
		return append([]string{"get", "--region", "us-east-1", "--log-level", "debug", "--endpoint-url", s.endpoint, s.url("f/"), filepath.Join(dir, "dest")}, extra...)
	}
	tests := []struct {
		name    string
		env     []string
		args    []string
		secrets []string
		code    int // the exit code wanted
	}{
		{name: "sse-c key on the command line, refused", args: get("--sse-c-key", short), secrets: []string{short}, code: 2},
		{name: "sse-c key in a file, refused", args: get("--sse-c-key-file", shortFile), secrets: []string{short}, code: 2},
		{name: "sse-c key in the environment, refused", env: []string{"S3PD_SSE_C_KEY=" + short}, args: get(), secrets: []string{short}, code: 2},
		{name: "sse-c key in the environment, denied", env: []string{"S3PD_SSE_C_KEY=" + sseKey}, args: get(), secrets: []string{sseKey}, code: 1},
		{name: "sse-c key in a file, denied", args: get("--sse-c-key-file", keyFile), secrets: []string{sseKey}, code: 1},
		{name: "sse-c key on the command line, denied", args: get("--sse-c-key", sseKey), secrets: []string{sseKey}, code: 1},
		{name: "credentials, denied", env: []string{"AWS_SECRET_ACCESS_KEY=sak-canary-5d1", "AWS_SESSION_TOKEN=tok-canary-9f2"},
			args: get(), secrets: []string{"sak-canary-5d1", "tok-canary-9f2"}, code: 1},
		{name: "endpoint password, denied", args: []string{"get", "--region", "us-east-1", "--log-level", "debug",
			"--endpoint-url", endpointWithPassword, s.url("f/"), filepath.Join(dir, "dest")}, secrets: []string{"pw-canary-77e1"}, code: 1},
		{name: "endpoint password, bad scheme", args: get("--endpoint-url", "ftp://AKIDCANARY:pw-canary-77e1@example.com"),
			secrets: []string{"pw-canary-77e1", "AKIDCANARY"}, code: 2},
		{name: "endpoint password, config show", args: []string{"config", "show", "--endpoint-url", endpointWithPassword},
			secrets: []string{"pw-canary-77e1", "AKIDCANARY"}, code: 0},
		{name: "unknown S3PD_ variable", env: []string{"S3PD_SECRET_KEY=env-canary-31c"}, args: get(), secrets: []string{"env-canary-31c"}, code: 2},
		{name: "malformed aws config line", env: []string{"AWS_CONFIG_FILE=" + write("config", "[default]\nregion = us-east-1\ncfg-canary-4a0b\n")},
			args: get(), secrets: []string{"cfg-canary-4a0b"}, code: 2},
		{name: "secret in the s3pd config file", args: get("--config", write("s3pd.yaml", "aws_secret_access_key: yaml-canary-8e2\n")),
			secrets: []string{"yaml-canary-8e2"}, code: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, tt.env, tt.args...)
			if r.code != tt.code {
				t.Errorf("exit %d, want %d\nstderr: %s", r.code, tt.code, r.stderr)
			}
			for _, secret := range tt.secrets {
				for _, form := range []string{secret, base64.StdEncoding.EncodeToString([]byte(secret))} {
					if strings.Contains(r.stdout+r.stderr, form) {
						t.Errorf("the output shows %q:\nstdout: %s\nstderr: %s", form, r.stdout, r.stderr)
					}
				}
			}
		})
	}
}
