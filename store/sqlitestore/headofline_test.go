package sqlitestore

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/storetest"
)

// TestKeyHeadOfLineAtScale is issue 21's acceptance 5 at full scale on
// SQLite (storetest.HeadOfLine): 1,000,000 jobs blocked behind a key's
// limit of 1, 1,000 other jobs claimed one at a time, against the same on
// an empty table: ≥ 90% of the rate, claim p99 ≤ 2×. Heavy: set
// HOPPER_HEAVY=1 to run it.
//
//	HOPPER_HEAVY=1 go test -run TestKeyHeadOfLineAtScale -v ./store/sqlitestore/
func TestKeyHeadOfLineAtScale(t *testing.T) {
	if testing.Short() || os.Getenv("HOPPER_HEAVY") == "" {
		t.Skip("set HOPPER_HEAVY=1 (and not -short) to run the 1,000,000-job head-of-line acceptance")
	}
	open := func(t testing.TB) store.Store {
		s := bOpen(t, filepath.Join(t.TempDir(), "h.db"), Options{})
		t.Cleanup(func() { s.Close() })
		return s
	}
	// No settle: SQLite does no upkeep of its own behind a fill.
	storetest.HeadOfLine(t, 1000, open, nil)
}
