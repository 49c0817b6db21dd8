package cmd

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/s3pd/s3pd/pkg/config"
)

// shownCredentials says where requests' credentials come from, as `aws
// configure list` does, without asking any service.
type shownCredentials struct {
	// Source is none, env, shared-credentials-file, config-file,
	// assume-role, sso, process, web-identity, container-role or
	// iam-role.
	Source string `json:"source"`
	// Location is the variable or file, when there is one.
	Location string `json:"location,omitempty"`
	// AccessKey is the access key ID with all but its last 4 characters
	// masked, when it is known without a request.
	AccessKey string `json:"access_key,omitempty"`
}

// credentialQuery is what decides where credentials come from: the
// profile, whether --profile named it, the config file, and
// --no-sign-request.
type credentialQuery struct {
	profile, configFile string
	named, noSign       bool
}

// queryOf is the query of loaded settings.
func queryOf(l *config.Loaded) credentialQuery {
	named := l.Origins != nil && l.Origins.Get("profile").Source == config.SourceFlag
	return credentialQuery{profile: l.Profile, configFile: l.AWSConfigFile, named: named, noSign: l.Settings.NoSignRequest}
}

// credentialSource finds the credentials the AWS SDK would use, in the
// AWS CLI v2's order: the environment's keys (unless --profile names a
// profile: then only the profile counts), a web identity token file in
// the environment, then the profile (role, SSO, process, keys in the
// credentials file or the config file), then the container or the
// instance role.
func credentialSource(getenv func(string) string, l *config.Loaded) shownCredentials {
	return credentialSourceOf(getenv, queryOf(l))
}

func credentialSourceOf(getenv func(string) string, q credentialQuery) shownCredentials {
	if getenv == nil {
		getenv = os.Getenv
	}
	if q.noSign {
		return shownCredentials{Source: "none", Location: "--no-sign-request"}
	}
	if id := getenv("AWS_ACCESS_KEY_ID"); id != "" && getenv("AWS_SECRET_ACCESS_KEY") != "" && !q.named {
		return shownCredentials{Source: "env", Location: "AWS_ACCESS_KEY_ID", AccessKey: mask(id)}
	}
	if f := getenv("AWS_WEB_IDENTITY_TOKEN_FILE"); f != "" && !q.named {
		return shownCredentials{Source: "web-identity", Location: "AWS_WEB_IDENTITY_TOKEN_FILE"}
	}
	l := struct{ Profile, AWSConfigFile string }{q.profile, q.configFile}
	cfg, _ := config.ReadAWSConfig(l.AWSConfigFile, false)
	credFile := getenv("AWS_SHARED_CREDENTIALS_FILE")
	if credFile == "" {
		credFile = filepath.Join(getenv("HOME"), ".aws", "credentials")
	}
	creds, _ := config.ReadAWSConfig(credFile, true)
	has := func(c *config.AWSConfig, key string) (string, bool) {
		if c == nil {
			return "", false
		}
		v, ok := c.Get(l.Profile, key)
		return v, ok && v != ""
	}
	for _, k := range []struct{ key, source string }{
		// A role with a web identity token file is assumed with the token.
		{"web_identity_token_file", "web-identity"}, {"role_arn", "assume-role"},
		{"sso_session", "sso"}, {"sso_start_url", "sso"}, {"credential_process", "process"},
	} {
		if _, ok := has(cfg, k.key); ok {
			return shownCredentials{Source: k.source, Location: l.AWSConfigFile}
		}
	}
	if id, ok := has(creds, "aws_access_key_id"); ok {
		return shownCredentials{Source: "shared-credentials-file", Location: credFile, AccessKey: mask(id)}
	}
	if id, ok := has(cfg, "aws_access_key_id"); ok {
		return shownCredentials{Source: "config-file", Location: l.AWSConfigFile, AccessKey: mask(id)}
	}
	if getenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI") != "" || getenv("AWS_CONTAINER_CREDENTIALS_FULL_URI") != "" {
		return shownCredentials{Source: "container-role"}
	}
	if disabled, _ := strconv.ParseBool(strings.TrimSpace(getenv("AWS_EC2_METADATA_DISABLED"))); disabled {
		return shownCredentials{Source: "none"}
	}
	return shownCredentials{Source: "iam-role", Location: "instance metadata, if this is an EC2 instance"}
}

// mask hides all but the last 4 characters, as `aws configure list`.
func mask(id string) string {
	if len(id) <= 4 {
		return "****"
	}
	return "****************" + id[len(id)-4:]
}
