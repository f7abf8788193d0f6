package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/pgstore"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// workload runs every kind of operation once or twice.
func workload(t *testing.T, s *pgstore.Store) {
	t.Helper()
	ctx := t.Context()
	keyed := newJob(t, "k")
	keyed.UniqueKey = "u"
	enqueue(t, s, newJob(t, "k"), newJob(t, "k"), keyed)
	enqueue(t, s, keyed)
	res, err := s.Claim(ctx, store.ClaimParams{Now: t0, Limit: 2, Worker: "w", LeaseUntil: t0.Add(time.Minute), Kinds: []string{"k"}})
	if err != nil || len(res.Jobs) != 2 {
		t.Fatalf("Claim: %v, %v", res, err)
	}
	if _, err := s.Heartbeat(ctx, store.HeartbeatParams{Now: t0, Worker: "w", Jobs: []store.Lease{{ID: res.Jobs[0].ID, Claim: 1}}, LeaseUntil: t0.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Finish(ctx, store.FinishParams{Now: t0, Outcomes: []store.Outcome{
		{ID: res.Jobs[0].ID, Attempt: 1, Claim: 1, State: job.StateCompleted, Result: []byte(`{"ok":1}`)},
		{ID: res.Jobs[1].ID, Attempt: 1, Claim: 1, State: job.StateDead, Error: "e"},
	}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Rescue(ctx, store.RescueParams{Now: t0.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RetryDead(ctx, store.RetryDeadParams{Now: t0, All: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Stats(ctx, store.StatsParams{Now: t0, FinishedSince: t0}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Count(ctx, store.ListParams{States: []job.State{job.StateAvailable}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.List(ctx, store.ListParams{Queue: job.DefaultQueue}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Purge(ctx, store.PurgeParams{States: []job.State{job.StateCompleted}, KeepNewest: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Lead(ctx, store.LeadParams{Now: t0, Name: "m", Holder: "w", TTL: time.Second}); err != nil {
		t.Fatal(err)
	}
	tx, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.EnqueueTx(ctx, tx, store.EnqueueParams{Now: t0, Jobs: []*job.Job{newJob(t, "k")}}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}

// preparedStatements counts the named prepared statements on every
// connection of the pool.
func preparedStatements(t *testing.T, p *pgxpool.Pool) int {
	t.Helper()
	ctx := context.Background()
	conns := p.AcquireAllIdle(ctx)
	defer func() {
		for _, c := range conns {
			c.Release()
		}
	}()
	n := 0
	for _, c := range conns {
		var k int
		if err := c.QueryRow(ctx, `SELECT count(*) FROM pg_prepared_statements`).Scan(&k); err != nil {
			t.Fatal(err)
		}
		n += k
	}
	return n
}

// TestPgBouncerMode: with hopper_pgbouncer=true the store leaves no named
// prepared statement on any connection and holds no LISTEN, yet Wake fires
// (by polling). The same workload in the default mode does prepare
// statements: the check can see them. (A test behind a real PgBouncer
// runs in CI.)
func TestPgBouncerMode(t *testing.T) {
	t.Parallel()
	schema := freshSchema(t)
	def := openStore(t, pgstore.Options{})
	workload(t, def)
	if n := preparedStatements(t, def.Pool()); n == 0 {
		t.Error("default mode: no prepared statement seen; the check cannot work")
	}
	s := openIn(t, schema, pgstore.Options{PgBouncer: true, PollInterval: 10 * time.Millisecond})
	workload(t, s)
	if n := preparedStatements(t, s.Pool()); n != 0 {
		t.Errorf("PgBouncer mode: %d prepared statements on the pool's connections, want none", n)
	}
	if s.Listening() {
		t.Error("PgBouncer mode: the store LISTENs")
	}
	var listeners int
	if err := conn(t).QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity WHERE query = $1`,
		"LISTEN "+pgx.Identifier{s.Channel()}.Sanitize()).Scan(&listeners); err != nil || listeners != 0 {
		t.Errorf("PgBouncer mode: %d sessions LISTEN on %s (%v)", listeners, s.Channel(), err)
	}
	drain(s)
	waitWake(t, s, "PgBouncer mode, polling")
}
