package pgstore_test

import (
	"testing"

	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/pgstore"
	"github.com/hopperq/hopper/store/storetest"
)

// TestConformance runs the store conformance suite, every case on a fresh
// schema, in parallel.
func TestConformance(t *testing.T) {
	t.Parallel()
	testURL(t)
	storetest.Run(t, func(t *testing.T) store.Store { return openStore(t, pgstore.Options{}) })
}

// TestConformancePgBouncer runs the suite in PgBouncer mode (no prepared
// statements, no LISTEN) against the server directly.
func TestConformancePgBouncer(t *testing.T) {
	t.Parallel()
	testURL(t)
	storetest.Run(t, func(t *testing.T) store.Store { return openStore(t, pgstore.Options{PgBouncer: true}) })
}
