package cmd

import "syscall"

// childAttr puts the emulator's process in a group of its own, so that a
// Ctrl-C at the terminal reaches bench alone (which then stops the
// emulator after its last request), and makes the kernel end it with
// bench's, however bench ends.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
