package cmd

import (
	"github.com/spf13/pflag"
)

// headerFlags are the flags whose values go into request headers as
// given (the region goes into every signature too; its setting checks
// it, wherever it comes from).
var headerFlags = []string{"expected-bucket-owner", "request-payer", "content-type", "cache-control",
	"content-disposition", "content-encoding", "metadata", "storage-class", "sse", "sse-kms-key-id"}

// checkHeaderFlags refuses, before any request, a flag value that no
// HTTP header can carry (a newline, another control character): the HTTP
// client would refuse every request that carries it, as a failure of the
// run instead of a usage error.
func checkHeaderFlags(fs *pflag.FlagSet) error {
	if fs == nil {
		return nil
	}
	for _, name := range headerFlags {
		f := fs.Lookup(name)
		if f == nil || !f.Changed {
			continue
		}
		if !headerSafe(f.Value.String()) {
			return usageErrorf("--%s %s: a header value cannot hold a control character", name, printable(f.Value.String()))
		}
	}
	return nil
}

// headerSafe reports whether v can be an HTTP header field value
// (RFC 9110: visible characters, spaces and tabs, and obs-text).
func headerSafe(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}
