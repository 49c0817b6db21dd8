// Package config holds s3pd's settings: their names and syntax (the AWS
// CLI's s3 settings plus s3pd's own), the size and rate parsers, the AWS
// config file reader, the record of where each value came from, and the
// rules that set the request budget (max_concurrent_requests, or
// workers x threads, or target_bandwidth), and Load, which resolves the
// settings from every source in precedence order (load.go says why viper
// reads the files but does not merge the sources).
package config

// Settings are the effective, validated values s3pd runs with.
type Settings struct {
	// Workers is the number of objects open at once.
	Workers int
	// Threads caps the ranges in flight of one object; 0: no cap, the
	// budget (MaxConcurrentRequests) is shared by all objects.
	Threads int
	// PartSize is the range size in bytes (multipart_chunksize, --partsize).
	PartSize int64
	// MultipartThreshold: objects smaller than it are fetched with one GET.
	MultipartThreshold int64
	// MaxConcurrentRequests is the budget: requests in flight overall.
	MaxConcurrentRequests int
	// MaxQueueSize bounds the queue between the lister and the workers.
	MaxQueueSize int
	// MaxBandwidth caps total throughput in bytes per second; 0 means none.
	MaxBandwidth int64
	// TargetBandwidth is the auto-tuning target in bytes per second; 0 means none.
	TargetBandwidth int64
	// PreferredTransferClient is auto, crt or classic (see docs/CONFIG.md).
	PreferredTransferClient string
	// DirectIO is auto, on or off: whether downloaded files are written
	// around the page cache (O_DIRECT).
	DirectIO string
	// NICs are the network interfaces requests are spread over; empty means
	// the system's routing decides.
	NICs []string
	// Region is the S3 region; empty lets the AWS SDK resolve it.
	Region string
	// EndpointURL overrides the S3 endpoint; empty means AWS.
	EndpointURL string
	// AddressingStyle is auto, path or virtual: where the bucket goes in
	// a request's URL. auto is path-style for a custom endpoint and
	// virtual-hosted for AWS, as the AWS CLI does.
	AddressingStyle string
	// Profile is the AWS profile named by --profile; empty means the
	// SDK's own resolution (AWS_PROFILE, else default), under which keys
	// in the environment come first.
	Profile string
	// NoSignRequest sends anonymous requests.
	NoSignRequest bool
	// CABundle is a PEM file of the certificate authorities to trust for
	// TLS instead of the system's; empty: the system's.
	CABundle string
	// NoVerifySSL skips the check of the server's certificate.
	NoVerifySSL bool
	// LogLevel is debug, info, warn or error.
	LogLevel string
	// LogFormat is console or json.
	LogFormat string
}

// Built-in defaults.
const (
	DefaultWorkers               = 256
	DefaultThreads               = 0 // no per-object cap
	DefaultPartSize              = 8 << 20
	DefaultMultipartThreshold    = 8 << 20
	DefaultMaxConcurrentRequests = 256
	DefaultMaxQueueSize          = 1000
)

// Transfer client names accepted by preferred_transfer_client.
const (
	ClientAuto    = "auto"
	ClientCRT     = "crt"
	ClientClassic = "classic"
)

// Direct I/O modes accepted by direct_io.
const (
	DirectIOAuto = "auto"
	DirectIOOn   = "on"
	DirectIOOff  = "off"
)

// Addressing styles accepted by addressing_style.
const (
	AddressingAuto    = "auto"
	AddressingPath    = "path"
	AddressingVirtual = "virtual"
)

// Defaults returns the built-in settings.
func Defaults() Settings {
	return Settings{
		Workers:                 DefaultWorkers,
		Threads:                 DefaultThreads,
		PartSize:                DefaultPartSize,
		MultipartThreshold:      DefaultMultipartThreshold,
		MaxConcurrentRequests:   DefaultMaxConcurrentRequests,
		MaxQueueSize:            DefaultMaxQueueSize,
		PreferredTransferClient: ClientAuto,
		DirectIO:                DirectIOOff,
		AddressingStyle:         AddressingAuto,
		LogLevel:                "warn",
		LogFormat:               "console",
	}
}
