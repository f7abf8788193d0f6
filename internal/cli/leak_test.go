package cli

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine behind. Exec jobs
// here run without the supervisor (kinds.Supervise is not called): a
// race-built test binary takes about a second to start as a supervisor.
// The supervisor is tested in package kinds and, through the real binary,
// in cmd/hopper.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
