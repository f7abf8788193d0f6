//go:build !unix

package kinds

import (
	"fmt"
	"runtime"
)

// execCred stands for the user a command runs as, which only Unix has.
type execCred struct{}

// lookupExecUser fails: commands run as another user only on Unix.
func lookupExecUser(name string, _ int) (*execCred, []string, error) {
	return nil, nil, fmt.Errorf("%q: running commands as another user is not supported on %s", name, runtime.GOOS)
}

// execUserIsRoot is false: there is no root user outside Unix.
func execUserIsRoot(string) bool { return false }
