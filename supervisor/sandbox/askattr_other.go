//go:build !linux

package sandbox

import "syscall"

// askAttr is the interpreter question's process's: no parent-death signal outside Linux.
func askAttr() *syscall.SysProcAttr { return nil }
