package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSSECKeySources(t *testing.T) {
	const key = "0123456789abcdef0123456789abcdef" // 32 bytes
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	plain, withNewline := write("k", key), write("kn", key+"\n")
	short := write("short", "canary-short-key")
	tests := []struct {
		name      string
		flag      sseCKeyFlags
		env       string
		want      string
		wantError string // a substring; the error must not show the key
	}{
		{name: "none", want: ""},
		{name: "flag", flag: sseCKeyFlags{key: key}, want: key},
		{name: "file", flag: sseCKeyFlags{file: plain}, want: key},
		{name: "file with a newline", flag: sseCKeyFlags{file: withNewline}, want: key},
		{name: "fileb:// as the AWS CLI", flag: sseCKeyFlags{key: "fileb://" + withNewline}, want: key},
		{name: "environment", env: key, want: key},
		{name: "flag over environment", flag: sseCKeyFlags{file: plain}, env: "x", want: key},
		{name: "both flags", flag: sseCKeyFlags{key: key, file: plain}, wantError: "give the key once"},
		{name: "short file", flag: sseCKeyFlags{file: short}, wantError: "from --sse-c-key-file must be 32 bytes, got 16"},
		{name: "short environment", env: "canary-short-key", wantError: "from S3PD_SSE_C_KEY must be 32 bytes, got 16"},
		{name: "short flag", flag: sseCKeyFlags{key: "canary-short-key"}, wantError: "from --sse-c-key must be 32 bytes"},
		{name: "missing file", flag: sseCKeyFlags{file: filepath.Join(dir, "none")}, wantError: "read the SSE-C key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			getenv := func(name string) string {
				if name == envSSECKey {
					return tt.env
				}
				return ""
			}
			got, err := tt.flag.resolve(getenv)
			if tt.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantError) || exitCode(err) != ExitUsage {
					t.Fatalf("got %q, %v; want a usage error containing %q", got, err, tt.wantError)
				}
				if strings.Contains(err.Error(), "canary") || strings.Contains(err.Error(), key) {
					t.Errorf("error %q shows the key", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}
