//go:build unix && !linux

package kinds

import "syscall"

// directProcAttr puts a command in a process group of its own. Unix
// systems other than Linux have no parent-death signal: the command
// outlives this process if it dies.
func directProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
