package raid

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// Runner runs one external command and returns its standard output. A
// command that exits non-zero returns a *CommandError.
type Runner interface {
	Run(ctx context.Context, name string, args ...string) ([]byte, error)
}

// CommandError is a command that could not start or exited non-zero.
type CommandError struct {
	Cmd      []string
	ExitCode int    // -1 when the command did not start
	Stderr   string // trimmed
	Err      error
}

func (e *CommandError) Error() string {
	msg := fmt.Sprintf("%s: %v", strings.Join(e.Cmd, " "), e.Err)
	if e.Stderr != "" {
		msg += ": " + e.Stderr
	}
	return msg
}

func (e *CommandError) Unwrap() error { return e.Err }

// exitCode returns the exit code of a *CommandError in err, or -1.
func exitCode(err error) int {
	var ce *CommandError
	if errors.As(err, &ce) {
		return ce.ExitCode
	}
	return -1
}

// ExecRunner runs commands with os/exec, stdin empty, in the C locale.
type ExecRunner struct{}

// Run runs name with args and returns its standard output.
func (ExecRunner) Run(ctx context.Context, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err == nil {
		return stdout.Bytes(), nil
	}
	code := -1
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	}
	return stdout.Bytes(), &CommandError{
		Cmd: append([]string{name}, args...), ExitCode: code,
		Stderr: firstLines(strings.TrimSpace(stderr.String()), 6), Err: err,
	}
}

// firstLines keeps the first n lines of s (mkfs prints its whole usage
// after the one line that matters).
func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines[n] = "..."
	}
	return strings.Join(lines, "\n")
}
