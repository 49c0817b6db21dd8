package cmd

import "syscall"

// childAttr makes the kernel end the emulator's process with bench's,
// however bench ends.
func childAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
