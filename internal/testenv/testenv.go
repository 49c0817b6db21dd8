// Package testenv is what s3pd's tests call when something they need is
// missing from the machine: a tool, a server, a device, root. Locally the
// test skips; under CI (CI=true, as .ci/run sets), which installs all of
// them, it fails, since a suite that skips there proves nothing.
package testenv

import "os"

// TB is the part of testing.TB that Unavailable uses.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Skipf(format string, args ...any)
}

// InCI reports whether the tests run in CI (CI=true).
func InCI() bool { return os.Getenv("CI") == "true" }

// Unavailable skips t for want of something on this machine, or fails it
// under CI.
func Unavailable(t TB, format string, args ...any) {
	t.Helper()
	if InCI() {
		t.Fatalf("CI: "+format, args...)
		return
	}
	t.Skipf(format, args...)
}
