package sqlitestore

import (
	"syscall"
	"testing"
)

// nobody skips t: running a command as another user needs Unix.
func nobody(t *testing.T) *syscall.SysProcAttr {
	t.Skip("running a process as user nobody needs Unix")
	return nil
}
