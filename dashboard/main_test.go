package dashboard

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine behind: the
// hub's, or a live stream's.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
