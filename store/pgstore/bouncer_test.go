package pgstore_test

import (
	"strings"
	"testing"
	"time"

	"github.com/hopperq/hopper/internal/pgtest"
	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/pgstore"
	"github.com/hopperq/hopper/store/storetest"
)

// bouncerStore opens a Store through the PgBouncer of HOPPER_TEST_PGBOUNCER
// (transaction pooling) with hopper_pgbouncer=true, on a fresh schema.
func bouncerStore(t *testing.T, extra string) *pgstore.Store {
	t.Helper()
	u := envOrSkip(t, pgtest.EnvBouncer, exampleBURL, "the tests behind PgBouncer")
	sep := "?"
	if strings.Contains(u, "?") {
		sep = "&"
	}
	u += sep + "hopper_pgbouncer=true&hopper_pool_size=4&hopper_schema=" + freshSchema(t) + extra
	st, err := store.Open(t.Context(), u, store.OpenOptions{})
	if err != nil {
		t.Fatalf("store.Open through PgBouncer: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st.(*pgstore.Store)
}

// TestBehindPgBouncer runs the conformance suite through a real PgBouncer
// in transaction mode: no prepared statement, no session state.
func TestBehindPgBouncer(t *testing.T) {
	t.Parallel()
	envOrSkip(t, pgtest.EnvBouncer, exampleBURL, "the tests behind PgBouncer")
	storetest.Run(t, func(t *testing.T) store.Store { return bouncerStore(t, "") })
}

// TestBehindPgBouncerWorkload: every operation, a transactional enqueue,
// and Wake by polling.
func TestBehindPgBouncerWorkload(t *testing.T) {
	t.Parallel()
	s := bouncerStore(t, "&hopper_poll_interval=10ms")
	workload(t, s)
	if s.Listening() {
		t.Error("the store LISTENs through PgBouncer")
	}
	drain(s)
	select {
	case <-s.Wake():
	case <-time.After(deadline):
		t.Fatal("Wake did not fire by polling")
	}
}
