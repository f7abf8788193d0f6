package sqlitestore_test

import (
	"path/filepath"
	"testing"

	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/sqlitestore"
	"github.com/hopperq/hopper/store/storetest"
)

// TestConformance runs the store conformance suite, each case on a fresh
// file.
func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := sqlitestore.Open(t.Context(), filepath.Join(t.TempDir(), "hopper.db"), sqlitestore.Options{})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}
