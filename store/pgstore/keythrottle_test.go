package pgstore_test

import (
	"os"
	"testing"

	"github.com/hopperq/hopper/store/pgstore"
	"github.com/hopperq/hopper/store/storetest"
)

// TestKeyThrottleScale: keys throttled per key keep one row each, gone 2
// periods after their starts: 10,000 keys, and with HOPPER_HEAVY=1 issue
// 21's 100,000 (acceptance 6).
func TestKeyThrottleScale(t *testing.T) {
	t.Parallel()
	testURL(t)
	keys := 10_000
	if os.Getenv("HOPPER_HEAVY") == "1" {
		keys = 100_000
	}
	storetest.KeyThrottleScale(t, openStore(t, pgstore.Options{}), keys)
}
