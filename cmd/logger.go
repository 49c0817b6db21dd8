package cmd

import (
	"fmt"
	"io"

	"github.com/s3pd/s3pd/pkg/config"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// newLogger builds the zap logger that writes to w (stderr).
func newLogger(w io.Writer, level, format string) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, usageErrorf("log level %q: want debug, info, warn or error", level)
	}
	cfg := zap.NewProductionEncoderConfig()
	cfg.EncodeTime = zapcore.ISO8601TimeEncoder
	var enc zapcore.Encoder
	switch format {
	case "json":
		enc = zapcore.NewJSONEncoder(cfg)
	case "console", "":
		cfg.EncodeLevel = zapcore.CapitalLevelEncoder
		enc = zapcore.NewConsoleEncoder(cfg)
	default:
		return nil, usageError(fmt.Errorf("log format %q: want console or json", format))
	}
	return zap.New(zapcore.NewCore(enc, zapcore.AddSync(w), lvl)), nil
}

// startLogger builds the run's logger from its settings, records whether
// stderr carries JSON and says the warnings of settings overridden (none
// when origins is nil).
func (f *runEnv) startLogger(s config.Settings, origins *config.Origins) error {
	log, err := newLogger(f.IO.ErrOut, s.LogLevel, s.LogFormat)
	if err != nil {
		return err
	}
	f.Logger, f.LogJSON = log, s.LogFormat == "json"
	if origins != nil {
		for _, w := range origins.Warnings() {
			log.Warn(w)
		}
	}
	return nil
}

// logRetry logs a retried listing, HEAD or upload request as it happens,
// with the reason, so a wait is never silent.
func (f *runEnv) logRetry(attempt int, err error) {
	if f.Logger != nil {
		f.Logger.Info("retrying S3 request", zap.Int("attempt", attempt+1), zap.String("reason", oneLine(err.Error())))
	}
}

// logListRetry logs a listing page asked again, as it happens.
func (f *runEnv) logListRetry(attempt int, err error) {
	if f.Logger != nil {
		f.Logger.Info("retrying listing page", zap.Int("attempt", attempt+1), zap.String("reason", oneLine(err.Error())))
	}
}
