package s3store

import (
	"fmt"
	"strings"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// URL is a parsed s3://bucket/key.
type URL struct {
	Bucket string
	Key    string
	// Prefix is true when the URL can only name a prefix: no key, a key
	// ending in "/", or a key with a wildcard.
	Prefix bool
	// Pattern is the wildcard part of the key, relative to Key (the
	// prefix before it): "*.safetensors" for s3://b/p/*.safetensors.
	Pattern string
}

// wildcards are the characters that make a key a pattern: "*" (any run
// of characters, "/" included) and "?" (one character).
const wildcards = "*?"

// ParseURL parses s3://bucket[/key]. A key with "*" or "?" is a pattern:
// Key is the prefix up to the last "/" before the first wildcard, and
// Pattern the rest, which Rules turns into include rules. s3://b/p/*
// names the prefix p/.
func ParseURL(s string) (URL, error) {
	u, err := ParseRawURL(s)
	if err != nil {
		return u, err
	}
	i := strings.IndexAny(u.Key, wildcards)
	if i < 0 {
		return u, nil
	}
	cut := strings.LastIndexByte(u.Key[:i], '/') + 1
	u.Key, u.Pattern, u.Prefix = u.Key[:cut], u.Key[cut:], true
	if u.Pattern == "*" {
		u.Pattern = "" // everything under the prefix
	}
	return u, nil
}

// ParseRawURL parses s3://bucket[/key] and takes the key literally, "*"
// and "?" included.
func ParseRawURL(s string) (URL, error) {
	rest, ok := strings.CutPrefix(s, "s3://")
	if !ok {
		return URL{}, fmt.Errorf("%q is not an s3:// URL", s)
	}
	bucket, key, _ := strings.Cut(rest, "/")
	if err := validBucket(bucket); err != nil {
		return URL{}, fmt.Errorf("%q: %w", s, err)
	}
	u := URL{Bucket: bucket, Key: key}
	u.Prefix = u.Key == "" || strings.HasSuffix(u.Key, "/")
	return u, nil
}

// Rules returns the rules a key's pattern stands for, followed by more:
// the AWS CLI's --exclude "*" --include PATTERN, so that the pattern
// matches across "/" as its --include does, and later rules (the user's
// --include and --exclude) still apply after it.
func (u URL) Rules(more transfer.Rules) transfer.Rules {
	if u.Pattern == "" {
		return more
	}
	return append(transfer.Rules{{Include: false, Pattern: "*"}, {Include: true, Pattern: u.Pattern}}, more...)
}

func validBucket(b string) error {
	if len(b) < 3 || len(b) > 63 {
		return fmt.Errorf("bucket name %q must be 3 to 63 characters", b)
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' ||
			c >= 'A' && c <= 'Z' || c == '_' // legacy bucket names
		if !ok {
			return fmt.Errorf("bucket name %q has invalid character %q", b, c)
		}
	}
	return nil
}
