package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/s3pd/s3pd/pkg/s3emu"
)

// The endpoint comes from where the AWS CLI reads it (AWS_ENDPOINT_URL,
// AWS_ENDPOINT_URL_S3, a profile's endpoint_url, its services section),
// and a custom endpoint is addressed path-style: a virtual-hosted URL
// (bucket.127.0.0.1) would not resolve.
func TestEndpointFromAWSEnvironmentAndProfile(t *testing.T) {
	s := emuStore(t, s3emu.Options{Dataset: "e:2:100KiB"})
	home := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(home, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	profile := write("profile", "[default]\nendpoint_url = "+s.endpoint+"\n")
	services := write("services", "[default]\nservices = emu\n[services emu]\ns3 =\n  endpoint_url = "+s.endpoint+"\n")
	wrong := write("wrong", "[default]\nendpoint_url = http://127.0.0.1:1\n")
	tests := []struct {
		name, origin string
		env          []string
	}{
		{"AWS_ENDPOINT_URL", "env AWS_ENDPOINT_URL", []string{"AWS_ENDPOINT_URL=" + s.endpoint}},
		{"AWS_ENDPOINT_URL_S3 wins", "env AWS_ENDPOINT_URL_S3", []string{"AWS_ENDPOINT_URL=http://127.0.0.1:1", "AWS_ENDPOINT_URL_S3=" + s.endpoint}},
		{"profile endpoint_url", "[default] endpoint_url", []string{"AWS_CONFIG_FILE=" + profile}},
		{"services section", "[default] services emu s3 endpoint_url", []string{"AWS_CONFIG_FILE=" + services}},
		{"env over profile", "env AWS_ENDPOINT_URL", []string{"AWS_CONFIG_FILE=" + wrong, "AWS_ENDPOINT_URL=" + s.endpoint}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dest := t.TempDir()
			r := run(t, tt.env, "get", "--quiet", "--no-sign-request", s.url("e/"), dest)
			if r.code != 0 {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
			}
			checkSynthetic(t, filepath.Join(dest, "00000001"), "e/00000001", 100<<10)
			r = run(t, tt.env, "config", "show")
			var line string
			for _, l := range strings.Split(r.stdout, "\n") {
				if strings.HasPrefix(l, "endpoint_url ") {
					line = l
				}
			}
			if !strings.Contains(line, s.endpoint) || !strings.Contains(line, tt.origin) {
				t.Errorf("config show: %q, want %s from %s", line, s.endpoint, tt.origin)
			}
		})
	}
}

// config show says, as `aws configure list` does, the region, the
// endpoint and where the credentials come from, with the key masked.
func TestConfigShowListsRegionEndpointCredentials(t *testing.T) {
	home := t.TempDir()
	creds := filepath.Join(home, "creds")
	if err := os.WriteFile(creds, []byte("[default]\naws_access_key_id = AKIAFROMFILE1234\naws_secret_access_key = s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		env  []string
		args []string
		want []string
	}{
		{[]string{"AWS_REGION=eu-west-3", "AWS_ENDPOINT_URL=http://127.0.0.1:9"}, nil, []string{
			"region: eu-west-3 (env AWS_REGION)", "endpoint: http://127.0.0.1:9 (env AWS_ENDPOINT_URL)",
			"credentials: env (AWS_ACCESS_KEY_ID), access key ****"}},
		{[]string{"AWS_ACCESS_KEY_ID=", "AWS_SHARED_CREDENTIALS_FILE=" + creds}, nil, []string{
			"region: not set: detected from the bucket", "endpoint: AWS (default)",
			"credentials: shared-credentials-file (" + creds + "), access key ****************1234"}},
		{nil, []string{"--no-sign-request"}, []string{"credentials: none (--no-sign-request)"}},
	}
	for _, tt := range tests {
		r := run(t, tt.env, append([]string{"config", "show"}, tt.args...)...)
		for _, w := range tt.want {
			if r.code != 0 || !strings.Contains(r.stdout, w+"\n") {
				t.Errorf("env %v: config show lacks %q:\n%s%s", tt.env, w, r.stdout, r.stderr)
			}
		}
		if strings.Contains(r.stdout, "AKIAFROMFILE") {
			t.Errorf("the access key is shown unmasked")
		}
	}
}

// A bucket in another region than the configured one: the first answer,
// 301 with x-amz-bucket-region or 400 AuthorizationHeaderMalformed (with
// the header, or with only the Region of its error body), as S3 sends
// them, moves s3pd to the bucket's region for the listing and every GET,
// as the AWS CLI does.
func TestRegionRedirectIsFollowed(t *testing.T) {
	for _, tt := range []struct {
		form   string
		status int
		srcs   []string
	}{
		{s3emu.WrongRegionMoved, 301, []string{"r/", "r/00000002"}},
		{s3emu.WrongRegionMalformed, 400, []string{"r/", "r/00000002"}},
		// A HEAD's answer has no body: only a listing (a GET) learns the
		// region from the body alone before any HEAD is sent.
		{s3emu.WrongRegionMalformedBodyOnly, 400, []string{"r/"}},
	} {
		s := emuStore(t, s3emu.Options{Dataset: "r:3:3MiB", LogRequests: true,
			Regions: map[string]string{"bench": "eu-west-1"}, WrongRegion: tt.form})
		s.signed = true
		for _, key := range tt.srcs {
			src := s.url(key)
			dest := t.TempDir()
			s.emu.ResetStats()
			r := run(t, nil, s.cmd("get", "--json", "--partsize", "1MiB", src, dest+"/")...)
			if r.code != 0 {
				t.Fatalf("%s: get %s: exit %d\n%s", tt.form, src, r.code, r.stderr)
			}
			checkSynthetic(t, filepath.Join(dest, "00000002"), "r/00000002", 3<<20)
			if !strings.Contains(r.stdout, `"verification":"verified"`) || strings.Contains(r.stdout, `"unverified"`) {
				t.Errorf("%s: get %s: want every object verified\n%s", tt.form, src, r.stdout)
			}
			moved := 0
			for _, req := range s.emu.Log() {
				if req.Status == tt.status {
					moved++
				}
			}
			// The first request, or the first two a single object sends at
			// once (its first range and its checksums' HEAD); none after.
			if moved < 1 || moved > 2 {
				t.Errorf("%s: get %s: %d requests answered %d, want the first one or two", tt.form, src, moved, tt.status)
			}
		}
	}
}
