package httpstore

import (
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"https://host/path/file.bin", "https://host/path/file.bin"},
		{"https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA%2F20261207%2Fus-east-1&X-Amz-Date=20261207T000000Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Security-Token=IQoJ&X-Amz-Signature=abc123",
			"https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=REDACTED&X-Amz-Date=20261207T000000Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Security-Token=REDACTED&X-Amz-Signature=REDACTED"},
		{"https://b.s3.amazonaws.com/k?AWSAccessKeyId=AKIA&Expires=1&Signature=xyz%3D", "https://b.s3.amazonaws.com/k?AWSAccessKeyId=REDACTED&Expires=1&Signature=REDACTED"},
		{"https://acct.blob.core.windows.net/c/f?sv=2022&se=2026&sp=r&sig=abc", "https://acct.blob.core.windows.net/c/f?sv=2022&se=2026&sp=r&sig=REDACTED"},
		{"https://cdn.example/f?Policy=p&Key-Pair-Id=K&Signature=s", "https://cdn.example/f?Policy=REDACTED&Key-Pair-Id=REDACTED&Signature=REDACTED"},
		{"https://hub.example/f?token=t&download=true", "https://hub.example/f?token=REDACTED&download=true"},
		{"https://hub.example/f?TOKEN=t&access_token=a&my_auth_token=b", "https://hub.example/f?TOKEN=REDACTED&access_token=REDACTED&my_auth_token=REDACTED"},
		{"https://host/f?X-Goog-Signature=s&X-Goog-Credential=c", "https://host/f?X-Goog-Signature=REDACTED&X-Goog-Credential=REDACTED"},
		{"https://user:pass@host/f", "https://user:REDACTED@host/f"},
		{"https://ghp_token@host/f", "https://REDACTED@host/f"},
		{"https://host/f?a=1#frag", "https://host/f?a=1"},
		{"https://host/f?flag", "https://host/f?flag"},
		{"https://host/a%20b/f?x=1", "https://host/a%20b/f?x=1"},
		{"http://[::1/f?sig=s", "http://[::1/f?REDACTED"}, // does not parse
	} {
		if got := Redact(tt.in); got != tt.want {
			t.Errorf("Redact(%q)\n got %q\nwant %q", tt.in, got, tt.want)
		}
	}
}

// TestErrorsNeverPrintCredentials: what the package's errors say of a
// presigned URL holds none of its secrets, whether the server refuses
// it or nothing answers.
func TestErrorsNeverPrintCredentials(t *testing.T) {
	const secret = "s3cr3tSIG"
	for _, raw := range []string{
		"http://127.0.0.1:1/f?X-Amz-Signature=" + secret, // refused: the client's *url.Error
		"ftp://host/f?sig=" + secret,
		"https://host/?token=" + secret, // no file name
	} {
		_, err := Open(t.Context(), Options{Items: []Item{{URL: raw}}, Backoff: quickBackoff})
		if err == nil {
			t.Fatalf("%s: no error", raw)
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("error prints the credential: %v", err)
		}
	}
}

func TestIsURL(t *testing.T) {
	for loc, want := range map[string]bool{
		"https://h/f": true, "http://h/f": true, "HTTPS://h/f": true,
		"s3://b/k": false, "-": false, "./https://x": false, "dir/file": false, "httpx://h": false,
	} {
		if got := IsURL(loc); got != want {
			t.Errorf("IsURL(%q) = %v, want %v", loc, got, want)
		}
	}
}
