//go:build tools

// Package main's tools.go pins modules that only benchmarks and reference
// clients import, so `go mod tidy` keeps them.
package main

import (
	_ "github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	_ "github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager"
	_ "github.com/minio/crc64nvme"
)
