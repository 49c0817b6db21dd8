package cmd

import (
	"os"
	"strings"

	"github.com/spf13/pflag"
)

// envSSECKey holds the SSE-C key, so it need not appear on the command
// line (where ps and shell history show it).
const envSSECKey = "S3PD_SSE_C_KEY"

// sseCKeyFlags are the three places an SSE-C key may come from, first
// found wins: --sse-c-key (also fileb://PATH, as the AWS CLI reads it),
// --sse-c-key-file PATH, and S3PD_SSE_C_KEY.
type sseCKeyFlags struct {
	key, file string
	// alg is --sse-c, the AWS CLI's algorithm flag: AES256, the only one.
	alg string
}

// given says a flag names SSE-C (the variable alone does not).
func (s *sseCKeyFlags) given() bool { return s.key != "" || s.file != "" || s.alg != "" }

func (s *sseCKeyFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&s.alg, "sse-c", "", "SSE-C algorithm, as the AWS CLI's flag: AES256 (the only one; the default when the flag has no value), with the key from --sse-c-key, --sse-c-key-file or "+envSSECKey)
	fs.Lookup("sse-c").NoOptDefVal = "AES256"
	fs.StringVar(&s.key, "sse-c-key", "", "customer-provided encryption key (SSE-C), 32 bytes, or fileb://PATH; ps shows it: prefer --sse-c-key-file or "+envSSECKey)
	fs.StringVar(&s.file, "sse-c-key-file", "", "read the SSE-C key (32 bytes, one trailing newline ignored) from this file")
}

// resolve returns the key, "" for none. Its errors name where the key came
// from and its length, never the key.
func (s *sseCKeyFlags) resolve(getenv func(string) string) (string, error) {
	if s.key != "" && s.file != "" {
		return "", usageErrorf("--sse-c-key and --sse-c-key-file: give the key once")
	}
	if s.alg != "" && s.alg != "AES256" {
		return "", usageErrorf("--sse-c %q: the only SSE-C algorithm is AES256", s.alg)
	}
	file, from := s.file, "--sse-c-key-file"
	if path, ok := strings.CutPrefix(s.key, "fileb://"); ok {
		file, from = path, "--sse-c-key fileb://"
	}
	var key string
	switch {
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return "", usageErrorf("read the SSE-C key (%s): %v", from, err)
		}
		key = string(b)
		if len(key) == 33 && key[32] == '\n' {
			key = key[:32]
		}
	case s.key != "":
		key, from = s.key, "--sse-c-key"
	default:
		key, from = getenv(envSSECKey), envSSECKey
	}
	if key != "" && len(key) != 32 {
		return "", usageErrorf("the SSE-C key from %s must be 32 bytes, got %d", from, len(key))
	}
	if key == "" && s.alg != "" {
		return "", usageErrorf("--sse-c needs the key: --sse-c-key, --sse-c-key-file or %s", envSSECKey)
	}
	return key, nil
}
