package cmd

import (
	"cmp"
	"fmt"
	"io"
	"strings"

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
	if err := checkHeaderFlags(fs); err != nil {
		return env, config.Settings{}, nil, err
	}
	if out != nil {
		r, closeRoute, err := out.openRoute(fac, dataOnStdout)
		if err != nil {
			return env, config.Settings{}, nil, err
		}
		env = &runEnv{Factory: fac, JSON: r.json, route: r, exits: closeRoute, net: env.net}
	}
	l, err := resolveSettings(fac, fs)
	if err != nil {
		return env, config.Settings{}, nil, err
	}
	settings, origins := l.Settings, l.Origins
	log, err := newLogger(fac.IO.ErrOut, settings.LogLevel, settings.LogFormat)
	if err != nil {
		return env, settings, origins, err
	}
	if out != nil {
		for _, w := range origins.Warnings() {
			log.Warn(w)
		}
	}
	env = &runEnv{Factory: fac, Logger: log, LogJSON: settings.LogFormat == "json", JSON: env.JSON, route: env.route, exits: env.exits, net: env.net, origins: origins}
	if log.Core().Enabled(zapcore.DebugLevel) {
		c := credentialSource(fac.Getenv, l)
		env.credentials = strings.TrimSuffix(c.Source+" ("+c.Location+")", " ()")
	}
	return env, settings, origins, nil
}

// logStart writes the --debug line that starts a transfer: where it
// goes, as whom, and the budget it runs under.
func (f *runEnv) logStart(s config.Settings, nics []string) {
	if f.Logger == nil || !f.Logger.Core().Enabled(zapcore.DebugLevel) {
		return
	}
	if nics == nil {
		nics = []string{}
	}
	endpoint, ok := config.Printable("endpoint_url", s.EndpointURL) // never its user information
	if !ok {
		endpoint = "REDACTED"
	}
	f.Logger.Debug("start", zap.String("endpoint", cmp.Or(endpoint, "AWS")), zap.String("region", cmp.Or(s.Region, "(the SDK's)")),
		zap.String("credentials", f.credentials), zap.Int("workers", s.Workers), zap.Int("threads", s.Threads),
		zap.Int("max_concurrent_requests", s.MaxConcurrentRequests), zap.Int64("part_size", s.PartSize),
		zap.Int64("multipart_threshold", s.MultipartThreshold), zap.Strings("nics", nics))
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
