//go:build !linux

package diskbench

// s3pd runs on Linux only: this package uses O_DIRECT, fallocate and
// /sys/dev/block. On another system the build stops here first, with this
// name as its message.
type _ S3PD_RUNS_ON_LINUX_ONLY
