package cmd

import (
	"cmp"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/s3pd/s3pd/pkg/config"
	"github.com/s3pd/s3pd/pkg/s3store"
)

// credentialsMessage says why no credentials were found, by the kind of
// profile the lookup went through, as the AWS CLI names it: the SSO
// token cache entry and the login that makes it, the web identity token
// file, a credential_process's exit status (never its output, which
// may hold secrets). Other kinds keep the general advice.
func credentialsMessage(getenv func(string) string, args []string, err error) string {
	home := getenv("HOME")
	q := credentialQuery{profile: cmp.Or(flagValue(args, config.FlagProfile), getenv("AWS_PROFILE"), "default"),
		configFile: cmp.Or(getenv("AWS_CONFIG_FILE"), filepath.Join(home, ".aws", "config")),
		named:      flagValue(args, config.FlagProfile) != ""}
	src := credentialSourceOf(getenv, q)
	cfg, _ := config.ReadAWSConfig(q.configFile, false)
	get := func(key string) string {
		if cfg == nil {
			return ""
		}
		v, _ := cfg.Get(q.profile, key)
		return v
	}
	switch src.Source {
	case "sso":
		return ssoMessage(home, q.profile, get("sso_session"), get("sso_start_url"))
	case "web-identity":
		file := get("web_identity_token_file")
		if src.Location == "AWS_WEB_IDENTITY_TOKEN_FILE" {
			file = getenv("AWS_WEB_IDENTITY_TOKEN_FILE")
		}
		return webIdentityMessage(q.profile, src.Location, file)
	case "process":
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return fmt.Sprintf("no AWS credentials: profile %s's credential_process failed with exit status %d (its output is not shown): run it by hand to see why", q.profile, ee.ExitCode())
		}
		return fmt.Sprintf("no AWS credentials: profile %s's credential_process gave no usable credentials (its output is not shown): run it by hand to see why", q.profile)
	}
	return s3store.ErrNoCredentials.Error()
}

// ssoMessage names the SSO token cache entry a profile needs, and why it
// is of no use: missing, expired or refused.
func ssoMessage(home, profile, session, startURL string) string {
	key, what := session, "sso_session "+session
	if key == "" {
		key, what = startURL, "sso_start_url "+startURL
	}
	sum := sha1.Sum([]byte(key))
	file := filepath.Join(home, ".aws", "sso", "cache", hex.EncodeToString(sum[:])+".json")
	login := fmt.Sprintf("run `aws sso login --profile %s`", profile)
	b, err := os.ReadFile(file)
	if err != nil {
		return fmt.Sprintf("no AWS credentials: profile %s signs in with SSO (%s), and there is no SSO token at %s: %s", profile, what, file, login)
	}
	var tok struct {
		ExpiresAt string `json:"expiresAt"`
	}
	if json.Unmarshal(b, &tok) == nil {
		if t, err := time.Parse(time.RFC3339, tok.ExpiresAt); err == nil && t.Before(time.Now()) {
			return fmt.Sprintf("no AWS credentials: profile %s's SSO token at %s expired at %s: %s", profile, file, t.UTC().Format(time.RFC3339), login)
		}
	}
	return fmt.Sprintf("no AWS credentials: profile %s's SSO token at %s was refused: %s", profile, file, login)
}

// webIdentityMessage names the web identity token file and what is
// wrong with it.
func webIdentityMessage(profile, from, file string) string {
	who := "profile " + profile
	if from == "AWS_WEB_IDENTITY_TOKEN_FILE" {
		who = "AWS_WEB_IDENTITY_TOKEN_FILE"
	}
	if _, err := os.Stat(file); err != nil {
		return fmt.Sprintf("no AWS credentials: %s names the web identity token file %s, which cannot be read: %v", who, file, errors.Unwrap(err))
	}
	return fmt.Sprintf("no AWS credentials: %s's web identity token (%s) was not exchanged for credentials: check the role and the token", who, file)
}
