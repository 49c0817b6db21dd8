//go:build !linux

package cmd

import "syscall"

// childAttr: outside Linux the emulator's process is ended by bench's
// stop alone.
func childAttr() *syscall.SysProcAttr { return nil }
