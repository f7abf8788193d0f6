//go:build !linux

package kinds

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"sync/atomic"
)

// supervisorAvailable is always false: supervisors need Linux (its
// parent-death signal).
var supervisorAvailable atomic.Bool

// Supervise must be called first in main by a program that runs exec jobs.
// On Linux it makes the commands of exec jobs die with the process running
// them (see the Linux documentation of this function); on other systems it
// does nothing, and a command's processes may outlive the process that
// started them.
func Supervise() {}

// errNoHandshake means the supervisor exited without saying whether it
// started the command.
var errNoHandshake = errors.New("no word from the supervisor")

// supervisorLink is unused without supervisors.
type supervisorLink struct{}

func supervisorCommand(context.Context, *exec.Cmd, *os.File) (*exec.Cmd, *supervisorLink, error) {
	return nil, nil, errors.New("exec supervisors need Linux")
}

func (*supervisorLink) started()               {}
func (*supervisorLink) close()                 {}
func (*supervisorLink) handshake(string) error { return nil }
