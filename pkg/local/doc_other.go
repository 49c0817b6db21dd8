//go:build !linux

package local

// s3pd runs on Linux only: this package uses openat2, O_PATH, copy_file_range and utimensat. On another
// system the build stops here first, with this name as its message.
type _ S3PD_RUNS_ON_LINUX_ONLY
