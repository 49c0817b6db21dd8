package s3store

import (
	"testing"

	"github.com/s3pd/s3pd/pkg/transfer"
)

func TestParseURL(t *testing.T) {
	tests := []struct {
		in              string
		key, pattern    string
		prefix, literal bool // literal: ParseRawURL gives the same
	}{
		{"s3://bkt", "", "", true, true},
		{"s3://bkt/", "", "", true, true},
		{"s3://bkt/p/k", "p/k", "", false, true},
		{"s3://bkt/p/", "p/", "", true, true},
		{"s3://bkt/p/*", "p/", "", true, false},
		{"s3://bkt/*", "", "", true, false},
		{"s3://bkt/p/*.safetensors", "p/", "*.safetensors", true, false},
		{"s3://bkt/p/model-*", "p/", "model-*", true, false},
		{"s3://bkt/model-0?.bin", "", "model-0?.bin", true, false},
		{"s3://bkt/a/b*/c/*.json", "a/", "b*/c/*.json", true, false},
	}
	for _, tt := range tests {
		u, err := ParseURL(tt.in)
		if err != nil {
			t.Errorf("%s: %v", tt.in, err)
			continue
		}
		if u.Bucket != "bkt" || u.Key != tt.key || u.Pattern != tt.pattern || u.Prefix != tt.prefix {
			t.Errorf("%s: got %+v, want key %q pattern %q prefix %v", tt.in, u, tt.key, tt.pattern, tt.prefix)
		}
		raw, _ := ParseRawURL(tt.in)
		if (raw == u) != tt.literal {
			t.Errorf("%s: raw %+v, wildcard %+v: literal %v", tt.in, raw, u, tt.literal)
		}
	}
	for _, bad := range []string{"bkt/k", "s3://b/k", "s3://bad bucket/k"} {
		if _, err := ParseURL(bad); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// TestURLRules: a key's pattern selects names under its prefix across
// "/", and the user's rules still apply after it.
func TestURLRules(t *testing.T) {
	u, err := ParseURL("s3://bkt/m/*.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	rules := u.Rules(transfer.Rules{{Include: false, Pattern: "bad*"}})
	for name, want := range map[string]bool{
		"a.safetensors":       true,
		"sub/b.safetensors":   true, // across "/"
		"config.json":         false,
		"bad.safetensors":     false, // the user's --exclude
		"a.safetensors.index": false,
	} {
		if got := rules.Match(name); got != want {
			t.Errorf("%s: got %v, want %v", name, got, want)
		}
	}
	if got := (URL{Key: "p/"}).Rules(nil); got != nil {
		t.Errorf("no pattern: got rules %v", got)
	}
}
