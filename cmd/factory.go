// Package cmd is s3pd's edge: cobra commands, viper configuration, the zap
// logger, progress bars and exit codes. Nothing under pkg/ imports it.
package cmd

import (
	"errors"
	"fmt"
	"io"
	"os"

	"go.uber.org/zap"
	"golang.org/x/term"

	"github.com/s3pd/s3pd/pkg/config"
)

// IOStreams are the streams a command reads and writes; tests replace them
// with buffers. Commands never touch os.Stdout or os.Stderr directly.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
	// ErrTTY reports whether ErrOut is a terminal (progress bars go there).
	ErrTTY bool
	// InTTY reports whether In is a terminal (for confirmation prompts).
	InTTY bool
}

// SystemStreams returns the process's standard streams.
func SystemStreams() *IOStreams {
	return &IOStreams{
		In:     os.Stdin,
		Out:    os.Stdout,
		ErrOut: os.Stderr,
		ErrTTY: term.IsTerminal(int(os.Stderr.Fd())),
		InTTY:  term.IsTerminal(int(os.Stdin.Fd())),
	}
}

// Factory hands commands their dependencies, so a test can swap them.
type Factory struct {
	IO      *IOStreams
	Version string
	// Getenv reads the environment (os.Getenv unless a test replaces it).
	Getenv func(string) string
}

// runEnv is what one run of a command builds as it starts (startRun)
// and hands down, so that the Factory never changes during a command:
// the logger made from the run's settings, whether stderr carries JSON,
// where the run's --json lines go, and the files to close when it ends.
// It does not change once built.
type runEnv struct {
	*Factory
	// Logger is built from --log-level/--log-format (nil until the
	// settings are loaded).
	Logger *zap.Logger
	// LogJSON: the logger writes JSON (--log-format json), so every line
	// on stderr must be JSON.
	LogJSON bool
	// JSON is where the run's --json lines go (nil: none); the error
	// line of a failed run goes there too.
	JSON io.Writer
	// route is where the run's lines go (nil: stdout), from its
	// output flags.
	route *route
	// exits run when the command ends (files it opened for its output).
	exits []func()
	// net is the run's HTTP transport, built on first use (transport).
	net *runTransport
	// credentials says where requests' credentials come from, for the
	// --debug start line ("" when not at debug).
	credentials string
	// origins say where the run's settings came from (nil until they
	// are loaded), for errors that name a preset.
	origins *config.Origins
}

// newRunEnv is the environment of a run that has built nothing of its
// own (yet).
func newRunEnv(f *Factory) *runEnv { return &runEnv{Factory: f, net: &runTransport{}} }

// end ends the run, deferred with the command's error: it flushes the
// logger and runs the exits, or, when the run failed, hands itself to
// Execute with the error, which writes the error line where the run's
// lines go before it runs the exits.
func (e *runEnv) end(err *error) {
	if e.Logger != nil {
		e.Logger.Sync()
	}
	if *err != nil {
		*err = &runError{err: *err, env: e}
		return
	}
	e.runExits()
}

func (e *runEnv) runExits() {
	for _, fn := range e.exits {
		fn()
	}
}

// runError is a failed run's error with the run's environment.
type runError struct {
	err error
	env *runEnv
}

func (e *runError) Error() string { return e.err.Error() }
func (e *runError) Unwrap() error { return e.err }

// Exit codes shared by every command.
const (
	ExitOK          = 0
	ExitFailed      = 1   // some objects failed
	ExitUsage       = 2   // usage or configuration error; nothing transferred
	ExitInterrupted = 130 // SIGINT (143, ExitTerminated, for SIGTERM)
)

// ExitError carries an exit code with the error that caused it.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// said marks an error whose every cause the run has already written on
// stderr, one line each: Execute writes no line of its own for it (a
// --json error line still carries it).
type said struct{ error }

func (s said) Unwrap() error { return s.error }

// usageError marks err as a usage or configuration error (exit 2).
func usageError(err error) error { return &ExitError{Code: ExitUsage, Err: err} }

// usageErrorf formats a usage or configuration error (exit 2).
func usageErrorf(format string, a ...any) error {
	return usageError(fmt.Errorf(format, a...))
}

// exitCode maps an error returned by a command to the process's exit code.
func exitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	return ExitFailed
}
