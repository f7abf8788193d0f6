package sqlitestore_test

import (
	"path/filepath"
	"testing"

	"github.com/hopperq/hopper/store/sqlitestore"
	"github.com/hopperq/hopper/store/storetest"
)

// TestKeyThrottleScale: 100,000 keys throttled per key keep one row each,
// gone 2 periods after their starts (issue 21, acceptance 6).
func TestKeyThrottleScale(t *testing.T) {
	t.Parallel()
	s, err := sqlitestore.Open(t.Context(), filepath.Join(t.TempDir(), "hopper.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	storetest.KeyThrottleScale(t, s, 100_000)
}
