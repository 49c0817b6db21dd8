package config

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/s3pd/s3pd/internal/testenv"
)

// awsConfigure writes an AWS config file with the real AWS CLI, so the
// file has the layout the AWS CLI writes; it skips without the CLI.
func awsConfigure(t *testing.T, path string, pairs ...string) {
	t.Helper()
	aws, err := exec.LookPath("aws")
	if err != nil {
		testenv.Unavailable(t, "the AWS CLI (aws) is not installed (.ci/run installs it)")
	}
	for i := 0; i+1 < len(pairs); i += 2 {
		cmd := exec.Command(aws, "configure", "set", pairs[i], pairs[i+1])
		cmd.Env = append(os.Environ(), "AWS_CONFIG_FILE="+path, "AWS_SHARED_CREDENTIALS_FILE="+path+".credentials")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("aws configure set %s %s: %v: %s", pairs[i], pairs[i+1], err, out)
		}
	}
}

func TestReadAWSConfigWrittenByAWSCLI(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config")
	awsConfigure(t, path,
		"default.s3.multipart_chunksize", "16MB",
		"default.s3.target_bandwidth", "50GB/s",
		"default.region", "us-west-2",
		"profile.dev.s3.max_concurrent_requests", "20",
		"profile.dev.s3.use_accelerate_endpoint", "true",
		"profile.dev.region", "eu-west-1",
	)
	c, err := ReadAWSConfig(path, false)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ profile, key, want string }{
		{"default", "multipart_chunksize", "16MB"},
		{"default", "target_bandwidth", "50GB/s"},
		{"dev", "max_concurrent_requests", "20"},
		{"dev", "use_accelerate_endpoint", "true"},
	}
	for _, tt := range tests {
		if got := c.Section(tt.profile, "s3")[tt.key]; got != tt.want {
			t.Errorf("[%s] s3.%s = %q, want %q", tt.profile, tt.key, got, tt.want)
		}
	}
	if got, _ := c.Get("dev", "region"); got != "eu-west-1" {
		t.Errorf("[dev] region = %q, want eu-west-1", got)
	}
	if !c.HasProfile("dev") || !c.HasProfile("default") || c.HasProfile("prod") {
		t.Errorf("HasProfile: dev %v default %v prod %v, want true true false", c.HasProfile("dev"), c.HasProfile("default"), c.HasProfile("prod"))
	}
}

func TestParseAWSConfig(t *testing.T) {
	const text = `# comment
; another
[DEFAULT]
inherited = yes

[default]
region: us-east-1
s3 =
  multipart_chunksize = 16MB

  max_queue_size = 50
[profile "quoted name"]
S3 =
    max_bandwidth = 100MB/s
[profile  spaced]
s3 = inline
[sso-session x]
s3 =
  multipart_chunksize = 1MB
[profilex]
region = nope
`
	c, err := ParseAWSConfig(strings.NewReader(text), "t", false)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Section("default", "s3"); got["multipart_chunksize"] != "16MB" || got["max_queue_size"] != "50" {
		t.Errorf("[default] s3 = %v, want chunksize 16MB and queue 50", got)
	}
	if got, _ := c.Get("default", "region"); got != "us-east-1" {
		t.Errorf("[default] region = %q, want us-east-1 (':' delimiter)", got)
	}
	if got, _ := c.Get("default", "inherited"); got != "yes" {
		t.Errorf("[default] inherited = %q, want yes from [DEFAULT]", got)
	}
	if got := c.Section("quoted name", "s3")["max_bandwidth"]; got != "100MB/s" {
		t.Errorf("[profile \"quoted name\"] s3.max_bandwidth = %q, want 100MB/s (keys lower-cased)", got)
	}
	if got := c.Section("spaced", "s3"); got != nil {
		t.Errorf("inline s3 value parsed as a block: %v", got)
	}
	if c.HasProfile("x") || c.HasProfile("profilex") || c.HasProfile("sso-session x") {
		t.Errorf("non-profile sections taken as profiles")
	}
}

func TestParseAWSConfigCredentials(t *testing.T) {
	c, err := ParseAWSConfig(strings.NewReader("[ci]\naws_access_key_id = A\n"), "creds", true)
	if err != nil {
		t.Fatal(err)
	}
	if !c.HasProfile("ci") {
		t.Errorf("credentials profile ci not found")
	}
}

func TestParseAWSConfigMalformed(t *testing.T) {
	tests := []struct{ name, text, want string }{
		{"no section", "region = x\n", "before any [section]"},
		{"no delimiter", "[default]\nregion\n", "not key = value"},
		{"duplicate section", "[default]\n[default]\n", "appears twice"},
		{"duplicate key", "[default]\nregion = a\nregion = b\n", "appears twice"},
		{"nested without =", "[default]\ns3 =\n  multipart_chunksize\n", "no '='"},
		{"empty header", "[]\n", "malformed section header"},
	}
	for _, tt := range tests {
		_, err := ParseAWSConfig(strings.NewReader(tt.text), "bad", false)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "bad") {
			t.Errorf("%s: got %v, want an error naming the file and containing %q", tt.name, err, tt.want)
		}
	}
}

func TestReadAWSConfigMissingFile(t *testing.T) {
	c, err := ReadAWSConfig(filepath.Join(t.TempDir(), "none"), false)
	if err != nil || c.HasProfile("default") {
		t.Errorf("got %v, %v; want an empty config", c, err)
	}
}
