package cmd

import (
	"testing"

	"github.com/s3pd/s3pd/pkg/config"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// TestEngineDefaultsAreConfigDefaults: pkg/config holds the one set of
// defaults; the engine's fallbacks for zero options must be the same
// numbers, so a library caller and the command line behave alike.
// Threads is 0 in both, which the engine reads as no per-object cap.
func TestEngineDefaultsAreConfigDefaults(t *testing.T) {
	fromConfig := engineOptions(config.Defaults())
	engine := transfer.Options{}.WithDefaults()
	for _, c := range []struct {
		name      string
		got, want int64
	}{
		{"workers", int64(engine.Workers), int64(fromConfig.Workers)},
		{"max requests", int64(engine.MaxRequests), int64(fromConfig.MaxRequests)},
		{"part size", engine.PartSize, fromConfig.PartSize},
		{"threshold", engine.Threshold, fromConfig.Threshold},
		{"queue size", int64(engine.QueueSize), int64(fromConfig.QueueSize)},
	} {
		if c.got != c.want {
			t.Errorf("engine default %s = %d, config default %d", c.name, c.got, c.want)
		}
	}
}
