//go:build !linux

package harnesskit

import "syscall"

// procAttr puts the harness in a process group of its own, so that SIGTERM and SIGKILL reach its
// children too.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
