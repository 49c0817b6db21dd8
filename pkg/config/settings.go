package config

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Setting describes one setting: its name in files (the AWS CLI's name
// where the AWS CLI has one), its flag, its environment variable and syntax.
type Setting struct {
	// Name is the key in the AWS config s3 section, presets and s3pd files.
	Name string
	// Flag is the command-line flag, without dashes.
	Flag string
	// Syntax is a short placeholder for help text: int, size, rate, list...
	Syntax string
	// Usage is a one-line description for help text.
	Usage string
	// AWSCLI reports whether the AWS CLI has this setting in its s3 section,
	// so s3pd reads it from there.
	AWSCLI bool
	// Bool reports whether the setting is a boolean flag.
	Bool bool

	set    func(*Settings, string) error
	get    func(Settings) any
	format func(Settings) string
}

// Env returns the setting's environment variable, S3PD_<NAME>.
func (d Setting) Env() string { return EnvPrefix + strings.ToUpper(d.Name) }

// EnvPrefix starts every s3pd environment variable.
const EnvPrefix = "S3PD_"

// Limits on counts, to catch typos before they open a million sockets.
const (
	MaxWorkers  = 1 << 16
	MaxThreads  = 1 << 12
	MaxRequests = 1 << 16
	MaxQueue    = 1 << 24
	// MaxPartSize is S3's largest part, 5 GiB.
	MaxPartSize = 5 << 30
)

var settings = []Setting{
	{Name: "workers", Flag: "workers", Syntax: "int", Usage: "objects open at once",
		set:    intSetter(func(s *Settings) *int { return &s.Workers }, 1, MaxWorkers),
		get:    func(s Settings) any { return s.Workers },
		format: func(s Settings) string { return strconv.Itoa(s.Workers) }},
	{Name: "threads", Flag: "threads", Syntax: "int", Usage: "cap on the ranges in flight of one object (0: none; the budget is shared by all objects)",
		set:    intSetter(func(s *Settings) *int { return &s.Threads }, 0, MaxThreads),
		get:    func(s Settings) any { return s.Threads },
		format: func(s Settings) string { return strconv.Itoa(s.Threads) }},
	{Name: "max_concurrent_requests", Flag: "max-concurrent-requests", Syntax: "int", AWSCLI: true,
		Usage:  "the budget: requests in flight in total (when only workers or threads are set: workers x threads)",
		set:    intSetter(func(s *Settings) *int { return &s.MaxConcurrentRequests }, 1, MaxRequests),
		get:    func(s Settings) any { return s.MaxConcurrentRequests },
		format: func(s Settings) string { return strconv.Itoa(s.MaxConcurrentRequests) }},
	{Name: "multipart_chunksize", Flag: "partsize", Syntax: "size", AWSCLI: true,
		Usage:  "part (range) size: 16MB, 8MiB, 1048576",
		set:    sizeSetter(func(s *Settings) *int64 { return &s.PartSize }, 1, MaxPartSize),
		get:    func(s Settings) any { return s.PartSize },
		format: func(s Settings) string { return FormatSize(s.PartSize) }},
	{Name: "multipart_threshold", Flag: "multipart-threshold", Syntax: "size", AWSCLI: true,
		Usage:  "objects smaller than this are fetched with one GET",
		set:    sizeSetter(func(s *Settings) *int64 { return &s.MultipartThreshold }, 1, 1<<62),
		get:    func(s Settings) any { return s.MultipartThreshold },
		format: func(s Settings) string { return FormatSize(s.MultipartThreshold) }},
	{Name: "max_queue_size", Flag: "max-queue-size", Syntax: "int", AWSCLI: true,
		Usage:  "bound on the queue of objects between the lister and the workers",
		set:    intSetter(func(s *Settings) *int { return &s.MaxQueueSize }, 1, MaxQueue),
		get:    func(s Settings) any { return s.MaxQueueSize },
		format: func(s Settings) string { return strconv.Itoa(s.MaxQueueSize) }},
	{Name: "max_bandwidth", Flag: "max-bandwidth", Syntax: "rate", AWSCLI: true,
		Usage:  "cap on total throughput: 100MB/s (or 100MB), 10Gb/s in bits; 0 means none",
		set:    rateSetter(func(s *Settings) *int64 { return &s.MaxBandwidth }),
		get:    func(s Settings) any { return s.MaxBandwidth },
		format: func(s Settings) string { return FormatRate(s.MaxBandwidth) }},
	{Name: "target_bandwidth", Flag: "target-bandwidth", Syntax: "rate", AWSCLI: true,
		Usage:  "throughput to tune concurrency for: 50GB/s (or 50GB), 100Gb/s in bits; 0 means none",
		set:    rateSetter(func(s *Settings) *int64 { return &s.TargetBandwidth }),
		get:    func(s Settings) any { return s.TargetBandwidth },
		format: func(s Settings) string { return FormatRate(s.TargetBandwidth) }},
	{Name: "preferred_transfer_client", Flag: "preferred-transfer-client", Syntax: "auto|crt|classic", AWSCLI: true,
		Usage:  "auto or crt tune concurrency from target_bandwidth; classic does not",
		set:    enumSetter(func(s *Settings) *string { return &s.PreferredTransferClient }, ClientAuto, ClientCRT, ClientClassic),
		get:    func(s Settings) any { return s.PreferredTransferClient },
		format: func(s Settings) string { return s.PreferredTransferClient }},
	{Name: "direct_io", Flag: "direct-io", Syntax: "auto|on|off",
		Usage:  "write downloaded files around the page cache (O_DIRECT); auto: objects of 64 MiB or more, where the file system takes it",
		set:    enumSetter(func(s *Settings) *string { return &s.DirectIO }, DirectIOAuto, DirectIOOn, DirectIOOff),
		get:    func(s Settings) any { return s.DirectIO },
		format: func(s Settings) string { return s.DirectIO }},
	{Name: "nics", Flag: "nics", Syntax: "list", Usage: "network interfaces to spread requests over: eth0,eth1",
		set:    setNICs,
		get:    func(s Settings) any { return slices.Clone(s.NICs) },
		format: func(s Settings) string { return strings.Join(s.NICs, ",") }},
	{Name: "region", Flag: "region", Syntax: "string", Usage: "S3 region (default: the AWS SDK's)",
		set:    setRegion,
		get:    func(s Settings) any { return s.Region },
		format: func(s Settings) string { return s.Region }},
	{Name: "endpoint_url", Flag: "endpoint-url", Syntax: "url", Usage: "S3 endpoint URL, for S3-compatible servers",
		set:    setEndpoint,
		get:    func(s Settings) any { return s.EndpointURL },
		format: func(s Settings) string { return s.EndpointURL }},
	{Name: "addressing_style", Flag: "addressing-style", Syntax: "auto|path|virtual", AWSCLI: true,
		Usage:  "bucket in the URL's path or host name; auto: path for a custom endpoint, virtual for AWS",
		set:    enumSetter(func(s *Settings) *string { return &s.AddressingStyle }, AddressingAuto, AddressingPath, AddressingVirtual),
		get:    func(s Settings) any { return s.AddressingStyle },
		format: func(s Settings) string { return s.AddressingStyle }},
	{Name: "no_sign_request", Flag: "no-sign-request", Syntax: "bool", Bool: true, Usage: "send anonymous, unsigned requests",
		set:    setNoSign,
		get:    func(s Settings) any { return s.NoSignRequest },
		format: func(s Settings) string { return strconv.FormatBool(s.NoSignRequest) }},
	{Name: "ca_bundle", Flag: "ca-bundle", Syntax: "path",
		Usage:  "PEM file of the certificate authorities to trust for TLS instead of the system's (also AWS_CA_BUNDLE and the AWS config's ca_bundle)",
		set:    setCABundle,
		get:    func(s Settings) any { return s.CABundle },
		format: func(s Settings) string { return s.CABundle }},
	{Name: "no_verify_ssl", Flag: "no-verify-ssl", Syntax: "bool", Bool: true, Usage: "do not verify the server's TLS certificate (as the AWS CLI's flag)",
		set:    boolSetter(func(s *Settings) *bool { return &s.NoVerifySSL }),
		get:    func(s Settings) any { return s.NoVerifySSL },
		format: func(s Settings) string { return strconv.FormatBool(s.NoVerifySSL) }},
	{Name: "log_level", Flag: "log-level", Syntax: "debug|info|warn|error", Usage: "log level",
		set:    enumSetter(func(s *Settings) *string { return &s.LogLevel }, "debug", "info", "warn", "error"),
		get:    func(s Settings) any { return s.LogLevel },
		format: func(s Settings) string { return s.LogLevel }},
	{Name: "log_format", Flag: "log-format", Syntax: "console|json", Usage: "log format",
		set:    enumSetter(func(s *Settings) *string { return &s.LogFormat }, "console", "json"),
		get:    func(s Settings) any { return s.LogFormat },
		format: func(s Settings) string { return s.LogFormat }},
}

// All returns every setting, in display order.
func All() []Setting { return slices.Clone(settings) }

// Lookup returns the setting named name.
func Lookup(name string) (Setting, bool) {
	for _, d := range settings {
		if d.Name == name {
			return d, true
		}
	}
	return Setting{}, false
}

// Names returns every setting's name, in display order.
func Names() []string {
	names := make([]string, len(settings))
	for i, d := range settings {
		names[i] = d.Name
	}
	return names
}

// errUnknown marks a key that is not a setting.
var errUnknown = errors.New("unknown setting")

// Set parses value for the setting named name and stores it in s.
func (s *Settings) Set(name, value string) error {
	d, ok := Lookup(name)
	if !ok {
		return unknownSetting(name)
	}
	return d.set(s, value)
}

// unknownSetting is the error of a key that names no setting: "did
// you mean" the closest one, when one is close, else the list.
func unknownSetting(name string) error {
	if near := Closest(name); near != "" {
		return fmt.Errorf("%w: did you mean %s?", errUnknown, near)
	}
	return fmt.Errorf("%w (known: %s)", errUnknown, strings.Join(Names(), ", "))
}

// Closest is the setting whose name is nearest name, within a few
// edits ("" when none is): max_concurent_requests is
// max_concurrent_requests.
func Closest(name string) string {
	for _, d := range All() {
		if strings.ReplaceAll(strings.ToLower(name), "_", "-") == d.Flag {
			return d.Name // the flag's name, for the setting's
		}
	}
	best, dist := "", max(2, len(name)/5)+1
	for _, n := range Names() {
		if d := EditDistance(strings.ToLower(name), n); d < dist {
			best, dist = n, d
		}
	}
	return best
}

// EditDistance is the Levenshtein distance between a and b, for "did
// you mean" suggestions.
func EditDistance(a, b string) int {
	prev, cur := make([]int, len(b)+1), make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Value returns the typed value of the setting named name (int, int64,
// string, bool or []string), or nil for an unknown name.
func (s Settings) Value(name string) any {
	if d, ok := Lookup(name); ok {
		return d.get(s)
	}
	return nil
}

// Format returns the value of the setting named name in the syntax its
// parser reads ("16MiB", "50GiB/s", "eth0,eth1").
func (s Settings) Format(name string) string {
	if d, ok := Lookup(name); ok {
		return d.format(s)
	}
	return ""
}

func intSetter(field func(*Settings) *int, lo, hi int) func(*Settings, string) error {
	return func(s *Settings, v string) error {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return fmt.Errorf("not an integer")
		}
		if n < lo || n > hi {
			return fmt.Errorf("must be between %d and %d", lo, hi)
		}
		*field(s) = n
		return nil
	}
}

func sizeSetter(field func(*Settings) *int64, lo, hi int64) func(*Settings, string) error {
	return func(s *Settings, v string) error {
		n, err := ParseSize(v)
		if err != nil {
			return err
		}
		if n < lo || n > hi {
			return fmt.Errorf("must be between %s and %s", FormatSize(lo), FormatSize(hi))
		}
		*field(s) = n
		return nil
	}
}

func rateSetter(field func(*Settings) *int64) func(*Settings, string) error {
	return func(s *Settings, v string) error {
		n, err := ParseRate(v)
		if err != nil {
			return err
		}
		*field(s) = n
		return nil
	}
}

func enumSetter(field func(*Settings) *string, allowed ...string) func(*Settings, string) error {
	return func(s *Settings, v string) error {
		v = strings.ToLower(strings.TrimSpace(v))
		if !slices.Contains(allowed, v) {
			return fmt.Errorf("want one of %s", strings.Join(allowed, ", "))
		}
		*field(s) = v
		return nil
	}
}

func setNICs(s *Settings, v string) error {
	var nics []string
	for _, n := range strings.Split(v, ",") {
		n = strings.TrimSpace(n)
		switch {
		case n == "":
			continue
		case len(n) > 15 || strings.ContainsAny(n, "/ \t:"):
			return fmt.Errorf("invalid interface name %q", n)
		case slices.Contains(nics, n):
			return fmt.Errorf("interface %q listed twice", n)
		}
		nics = append(nics, n)
	}
	s.NICs = nics
	return nil
}

// setRegion takes a region: letters, digits, '-', '_' and '.' only, as
// every region name is. It goes into each request's host name and
// signature (the Authorization header): a newline or a space there
// would fail every request, so it is refused before any.
func setRegion(s *Settings, v string) error {
	v = strings.TrimSpace(v)
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return fmt.Errorf("invalid region: want letters, digits, '-', '_' or '.'")
		}
	}
	s.Region = v
	return nil
}

func setEndpoint(s *Settings, v string) error {
	v = strings.TrimSpace(v)
	if v == "" {
		s.EndpointURL = ""
		return nil
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("want an http:// or https:// URL with a host")
	}
	s.EndpointURL = v
	return nil
}

func setNoSign(s *Settings, v string) error {
	return boolSetter(func(s *Settings) *bool { return &s.NoSignRequest })(s, v)
}

func boolSetter(field func(*Settings) *bool) func(*Settings, string) error {
	return func(s *Settings, v string) error {
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return fmt.Errorf("want true or false")
		}
		*field(s) = b
		return nil
	}
}

// setCABundle takes a path; whether it holds certificates is checked when
// the transport is built, which reads it.
func setCABundle(s *Settings, v string) error {
	v = strings.TrimSpace(v)
	if strings.ContainsRune(v, 0) {
		return fmt.Errorf("invalid path")
	}
	s.CABundle = v
	return nil
}
