//go:build !(linux && amd64)

package e2e

// launcher is nil where no seccomp filter is written for the platform.
var launcher func()
