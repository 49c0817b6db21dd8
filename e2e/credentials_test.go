package e2e

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/s3pd/s3pd/pkg/s3emu"
)

// credentialsConfig has a profile of each kind.
const credentialsConfig = `[profile keys]
aws_access_key_id = AKIAPROFILEKEYS00001
aws_secret_access_key = profile-secret
[profile sso]
sso_session = corp
sso_account_id = 123456789012
sso_role_name = reader
[sso-session corp]
sso_start_url = https://example.awsapps.com/start
sso_region = us-east-1
[profile wi]
role_arn = arn:aws:iam::123456789012:role/reader
web_identity_token_file = /nonexistent/s3pd-test/token
[profile proc]
credential_process = sh -c "echo secret-output-must-not-show; exit 3"
`

// botocoreKey is the access key botocore (the AWS CLI's library)
// resolves with the session's profile argv[1] ("" for none).
const botocoreKey = `
import json, sys, botocore.session
s = botocore.session.Session(profile=sys.argv[1] or None)
c = s.get_credentials()
print(json.dumps(c.access_key if c else None))
`

// TestCredentialsAsTheAWSCLI: s3pd signs with the keys botocore resolves
// (keys in the environment win over AWS_PROFILE, --profile wins over
// them), and `config show` says the same; a profile whose credentials
// cannot be had is named with what is missing.
func TestCredentialsAsTheAWSCLI(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err == nil {
		err = exec.Command(py, "-c", "import botocore.session").Run()
	}
	if err != nil {
		unavailable(t, "botocore (the AWS CLI's library) is not installed")
	}
	s := emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory})
	s.put(t, "obj", []byte("x"))
	var mu sync.Mutex
	var keys []string
	target, _ := url.Parse(s.endpoint)
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if m := regexp.MustCompile(`Credential=([A-Z0-9]+)/`).FindStringSubmatch(r.Header.Get("Authorization")); m != nil {
			mu.Lock()
			keys = append(keys, m[1])
			mu.Unlock()
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)

	home := t.TempDir()
	cfg := filepath.Join(home, "config")
	os.WriteFile(cfg, []byte(credentialsConfig), 0o644)
	base := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "AWS_CONFIG_FILE=" + cfg,
		"AWS_SHARED_CREDENTIALS_FILE=" + filepath.Join(home, "credentials"), "AWS_EC2_METADATA_DISABLED=true"}
	envKeys := []string{"AWS_ACCESS_KEY_ID=AKIAENVIRONMENT00001", "AWS_SECRET_ACCESS_KEY=env-secret"}
	runWith := func(env []string, args ...string) result {
		c := exec.Command(bin, args...)
		c.Env = env
		var stdout, stderr bytes.Buffer
		c.Stdout, c.Stderr = &stdout, &stderr
		err := c.Run()
		r := result{stdout: stdout.String(), stderr: stderr.String()}
		if ee, ok := err.(*exec.ExitError); ok {
			r.code = ee.ExitCode()
		}
		return r
	}
	tests := []struct {
		name    string
		env     []string
		profile string // --profile
		want    string // the access key signing, "" for an error
		stderr  []string
	}{
		{"environment keys", envKeys, "", "AKIAENVIRONMENT00001", nil},
		{"environment keys win over AWS_PROFILE", append([]string{"AWS_PROFILE=keys"}, envKeys...), "", "AKIAENVIRONMENT00001", nil},
		{"--profile wins over environment keys", envKeys, "keys", "AKIAPROFILEKEYS00001", nil},
		{"AWS_PROFILE without environment keys", []string{"AWS_PROFILE=keys"}, "", "AKIAPROFILEKEYS00001", nil},
		{"--profile", nil, "keys", "AKIAPROFILEKEYS00001", nil},
		{"sso without a token", nil, "sso", "", []string{"SSO", filepath.Join(home, ".aws", "sso", "cache", sha1Hex("corp")+".json"), "aws sso login --profile sso"}},
		{"web identity without its file", nil, "wi", "", []string{"web identity token file /nonexistent/s3pd-test/token"}},
		{"credential_process that fails", nil, "proc", "", []string{"credential_process failed with exit status 3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := append(append([]string{}, base...), tt.env...)
			args := []string{"get", "--endpoint-url", srv.URL, "--region", "us-east-1", "--no-progress"}
			if tt.profile != "" {
				args = append(args, "--profile", tt.profile)
			}
			mu.Lock()
			keys = nil
			mu.Unlock()
			r := runWith(env, append(args, s.url("obj"), t.TempDir())...)
			if tt.want == "" {
				if r.code == 0 {
					t.Fatalf("exit 0, want a credentials error")
				}
				for _, w := range tt.stderr {
					if !strings.Contains(r.stderr, w) {
						t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
					}
				}
				if strings.Contains(r.stderr, "secret-output") {
					t.Errorf("the credential_process's output is shown:\n%s", r.stderr)
				}
				return
			}
			if r.code != 0 {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
			}
			mu.Lock()
			got := append([]string{}, keys...)
			mu.Unlock()
			if len(got) == 0 || got[0] != tt.want {
				t.Errorf("signed with %v, want %s", got, tt.want)
			}
			c := exec.Command(py, "-c", botocoreKey, tt.profile)
			c.Env = env
			out, err := c.Output()
			if err != nil {
				t.Fatalf("botocore: %v", err)
			}
			var boto string
			json.Unmarshal(out, &boto)
			if boto != tt.want {
				t.Errorf("botocore resolves %q, s3pd signed with %q", boto, tt.want)
			}
			show := runWith(env, append([]string{"config", "show"}, args[len(args)-2:]...)...)
			if tt.profile == "" {
				show = runWith(env, "config", "show")
			}
			if !strings.Contains(show.stdout, tt.want[len(tt.want)-4:]) {
				t.Errorf("config show does not name the key ending %s:\n%s", tt.want[len(tt.want)-4:], show.stdout)
			}
		})
	}
}

func sha1Hex(s string) string {
	sum := sha1.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}
