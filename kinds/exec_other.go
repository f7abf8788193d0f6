//go:build !unix

package kinds

import (
	"context"
	"runtime"

	"github.com/hopperq/hopper"
)

// ExecSupported reports whether this system runs exec jobs: true on Unix
// (Linux, macOS, the BSDs), false elsewhere (Windows), where Exec fails
// permanently. hopper serve offers the exec kind only where it is true.
const ExecSupported = false

// run checks a, as on Unix, then fails permanently: commands need Unix
// process groups (see ExecArgs).
func (r *execRunner) run(_ context.Context, a ExecArgs, _ bool) (*ExecResult, error) {
	if err := a.Validate(); err != nil {
		return nil, hopper.Permanent(err)
	}
	return nil, execUnsupported(runtime.GOOS)
}
