package memstore_test

import (
	"testing"

	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/memstore"
	"github.com/hopperq/hopper/store/storetest"
)

// TestConformance runs the suite against the in-memory store, which
// keeps closures.
func TestConformance(t *testing.T) {
	storetest.RunWithOptions(t, storetest.Options{Closures: true}, func(t *testing.T) store.Store {
		s := memstore.New()
		t.Cleanup(func() { s.Close() })
		return s
	})
}
