package cmd

import (
	"strings"

	"go.uber.org/zap"

	"github.com/s3pd/s3pd/pkg/config"
	"github.com/s3pd/s3pd/pkg/nics"
)

// planNICs checks --nics for a dry run. A dry run moves no data over the
// cards, so cards this machine does not have (the command of a larger
// machine, planned from this one) do not stop it: a warning names them
// and what a real run would do, and the listing goes over the default
// route. A real run with such cards is still a usage error.
func planNICs(f *runEnv, s *config.Settings, dryRun bool) {
	if !dryRun || len(s.NICs) == 0 {
		return
	}
	if _, err := nics.Resolve(strings.Join(s.NICs, ",")); err != nil {
		f.Logger.Warn("dry run: the cards of --nics cannot be used here, so the listing goes over the default route; a real run would stop (exit 2)",
			zap.String("reason", err.Error()))
		s.NICs = nil
	}
}
