// Command s3pd moves data out of S3 and S3-compatible stores as fast as
// the hardware allows.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/s3pd/s3pd/cmd"
)

var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cmd.Execute(ctx, cmd.SystemStreams(), version, os.Args[1:])
	stop()
	os.Exit(code)
}
