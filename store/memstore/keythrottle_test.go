package memstore_test

import (
	"testing"

	"github.com/hopperq/hopper/store/memstore"
	"github.com/hopperq/hopper/store/storetest"
)

// TestKeyThrottleScale: 100,000 keys throttled per key keep one state
// each, gone 2 periods after their starts (issue 21, acceptance 6).
func TestKeyThrottleScale(t *testing.T) {
	t.Parallel()
	s := memstore.New()
	t.Cleanup(func() { s.Close() })
	storetest.KeyThrottleScale(t, s, 100_000)
}
