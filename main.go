// Command s3pd moves data out of S3 and S3-compatible stores as fast as
// the hardware allows.
package main

import (
	"os"

	"github.com/s3pd/s3pd/cmd"
)

var version = "dev"

func main() {
	ctx, stop := cmd.SignalContext()
	code := cmd.Execute(ctx, cmd.SystemStreams(), version, os.Args[1:])
	stop()
	os.Exit(code)
}
