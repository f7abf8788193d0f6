//go:build unix

package sqlitestore

import (
	"syscall"
	"testing"
)

// nobody makes a command run as user nobody (65534).
func nobody(*testing.T) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
}
