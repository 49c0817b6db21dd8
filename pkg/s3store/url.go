package s3store

import (
	"fmt"
	"strings"
)

// URL is a parsed s3://bucket/key.
type URL struct {
	Bucket string
	Key    string
	// Prefix is true when the URL can only name a prefix: no key, a key
	// ending in "/", or a trailing "/*" wildcard.
	Prefix bool
}

// ParseURL parses s3://bucket[/key]. The key's trailing "/*" is a
// wildcard for the prefix before it.
func ParseURL(s string) (URL, error) {
	rest, ok := strings.CutPrefix(s, "s3://")
	if !ok {
		return URL{}, fmt.Errorf("%q is not an s3:// URL", s)
	}
	bucket, key, _ := strings.Cut(rest, "/")
	if err := validBucket(bucket); err != nil {
		return URL{}, fmt.Errorf("%q: %w", s, err)
	}
	u := URL{Bucket: bucket, Key: key}
	if k, ok := strings.CutSuffix(key, "*"); ok {
		if strings.ContainsAny(k, "*?[") || (k != "" && !strings.HasSuffix(k, "/")) {
			return URL{}, fmt.Errorf("%q: only a trailing /* wildcard is supported; use --include/--exclude", s)
		}
		u.Key = k
	}
	u.Prefix = u.Key == "" || strings.HasSuffix(u.Key, "/")
	return u, nil
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
