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
	// Logger is built by the root command from --log-level/--log-format.
	Logger *zap.Logger
	// exits run when the command ends (files it opened for its output).
	exits []func()
	// LogJSON: the logger writes JSON (--log-format json), so every line
	// on stderr must be JSON.
	LogJSON bool
	// JSON, when set, is where the run's --json lines go.
	JSON io.Writer
}

// onExit runs fn when the command ends, whatever its outcome.
func (f *Factory) onExit(fn func()) { f.exits = append(f.exits, fn) }

// Exit codes shared by every command.
const (
	ExitOK          = 0
	ExitFailed      = 1   // some objects failed
	ExitUsage       = 2   // usage or configuration error; nothing transferred
	ExitInterrupted = 130 // SIGINT
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
