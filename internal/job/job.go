// Package job sits between the command line and the engine: from a
// description of what a command was asked (a Spec), Open decides what to
// transfer and where: the source, opened through the stores' registry
// (store.Registry, passed in with the spec) as a single object or a
// prefix, the sink, where each object lands (decided once, in Land), who
// lists, and the engine's options; Run.Transfer runs the engine, and
// Run.Delete is --delete's step after it. It hands the engine values
// that do not change once built, and knows nothing of flags,
// configuration files, logging or rendering: cmd keeps those.
package job

import "fmt"

// SpecError says a spec cannot run as asked (a usage error: nothing was
// transferred). The command line reports it as such.
type SpecError struct{ Err error }

func (e *SpecError) Error() string { return e.Err.Error() }
func (e *SpecError) Unwrap() error { return e.Err }

func specErrorf(format string, a ...any) error {
	return &SpecError{Err: fmt.Errorf(format, a...)}
}
