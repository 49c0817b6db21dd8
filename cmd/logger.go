package cmd

import (
	"fmt"
	"io"

	"github.com/spf13/pflag"

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

// startRun starts one run of a command and builds its environment once:
// where its lines go (out's route, opened here, once the command knows
// whether stdout carries data; nil out: a command without a route, whose
// warnings of overridden settings are not said), its settings from the
// flags fs, and its logger. The environment is never nil: when a step
// fails, it holds what the steps before it built, so that the error line
// goes where the run's lines go.
func startRun(fac *Factory, fs *pflag.FlagSet, out *outputFlags, dataOnStdout bool) (*runEnv, config.Settings, *config.Origins, error) {
	env := newRunEnv(fac)
	if out != nil {
		closeRoute, err := out.openRoute(fac, dataOnStdout)
		if err != nil {
			return env, config.Settings{}, nil, err
		}
		env = &runEnv{Factory: fac, JSON: out.jsonOut(fac), exits: closeRoute, net: env.net}
	}
	settings, origins, err := loadSettings(fac, fs)
	if err != nil {
		return env, settings, origins, err
	}
	log, err := newLogger(fac.IO.ErrOut, settings.LogLevel, settings.LogFormat)
	if err != nil {
		return env, settings, origins, err
	}
	if out != nil {
		for _, w := range origins.Warnings() {
			log.Warn(w)
		}
	}
	env = &runEnv{Factory: fac, Logger: log, LogJSON: settings.LogFormat == "json", JSON: env.JSON, exits: env.exits, net: env.net}
	return env, settings, origins, nil
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
