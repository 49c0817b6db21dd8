//go:build !linux

package nics

// s3pd runs on Linux only: this package uses netlink and SO_BINDTODEVICE. On another
// system the build stops here first, with this name as its message.
type _ S3PD_RUNS_ON_LINUX_ONLY
