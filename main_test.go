package hopper_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine behind. Tests in
// synctest bubbles are also checked by the bubble itself.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
