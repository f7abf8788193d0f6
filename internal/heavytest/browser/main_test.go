package browser

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine behind: the
// dashboard's, a live stream's, or the browser's.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
