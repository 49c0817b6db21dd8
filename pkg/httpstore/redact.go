package httpstore

import (
	"net/url"
	"strings"
)

// Redacted replaces a credential in a printed URL.
const Redacted = "REDACTED"

// secretKeys are query keys whose values are credentials, in lower case:
// S3's and Google's presigned URLs (SigV4 and SigV2), CloudFront's and
// Azure's signed URLs, and the usual token parameters.
var secretKeys = map[string]bool{
	"x-amz-signature": true, "x-amz-credential": true, "x-amz-security-token": true,
	"x-goog-signature": true, "x-goog-credential": true,
	"signature": true, "sig": true, "token": true, "access_token": true,
	"awsaccesskeyid": true, "googleaccessid": true, "key-pair-id": true, "policy": true,
	"api_key": true, "apikey": true, "key": true, "password": true, "secret": true,
}

// secret reports whether a query key names a credential: one of
// secretKeys, or any key that says signature, token, credential or
// secret.
func secret(key string) bool {
	k := strings.ToLower(key)
	if secretKeys[k] {
		return true
	}
	for _, w := range []string{"signature", "token", "credential", "secret", "password"} {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// Redact returns raw fit to print: the scheme, host and path as they
// are, a user's password (or a user name alone, which may be a token)
// replaced, and the value of every query
// parameter that is a credential (X-Amz-Signature, X-Amz-Credential,
// X-Amz-Security-Token, Signature, sig, token, ...) replaced with
// REDACTED; the other parameters and their order stay. A URL that does
// not parse keeps only what precedes its query.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		base, _, cut := strings.Cut(raw, "?")
		if cut {
			return base + "?" + Redacted
		}
		return base
	}
	switch _, has := u.User.Password(); {
	case has:
		u.User = url.UserPassword(u.User.Username(), Redacted)
	case u.User != nil:
		u.User = url.User(Redacted) // a user name alone may be a token
	}
	u.Fragment, u.RawFragment = "", ""
	if u.RawQuery == "" {
		return u.String()
	}
	params := strings.Split(u.RawQuery, "&")
	for i, p := range params {
		k, _, hasValue := strings.Cut(p, "=")
		name, err := url.QueryUnescape(k)
		if err != nil {
			name = k
		}
		if hasValue && secret(name) {
			params[i] = k + "=" + Redacted
		}
	}
	u.RawQuery = strings.Join(params, "&")
	return u.String()
}

// redactErr returns err with the URL of a client error (*url.Error, whose
// message holds the URL it requested, a redirect's included) redacted;
// its chain is kept, so the engine still reads its behaviour.
func redactErr(err error) error {
	ue, ok := err.(*url.Error)
	if !ok {
		return err
	}
	return &url.Error{Op: ue.Op, URL: Redact(ue.URL), Err: ue.Err}
}
