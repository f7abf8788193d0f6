package pgstore_test

import (
	"testing"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/pgstore"
)

// TestSelfVacuum: with autovacuum off for the jobs table, a Store vacuums
// it itself once enough rows are dead, and only then.
func TestSelfVacuum(t *testing.T) {
	t.Parallel()
	s := openStore(t, pgstore.Options{NoVacuum: true}) // no background rounds: the test runs them
	ctx := t.Context()
	c := conn(t)
	if _, err := c.Exec(ctx, `ALTER TABLE `+s.Schema()+`.jobs SET (autovacuum_enabled = false)`); err != nil {
		t.Fatal(err)
	}
	if did, err := pgstore.VacuumOnce(s); err != nil || did {
		t.Fatalf("VacuumOnce of a new table: %v, %v, want nothing done", did, err)
	}
	// 3,000 jobs claimed and completed: 6,000 dead row versions.
	for range 3 {
		js := make([]*job.Job, 1000)
		for i := range js {
			js[i] = newJob(t, "k")
		}
		enqueue(t, s, js...)
		res, err := s.Claim(ctx, store.ClaimParams{Now: t0, Limit: 1000, Worker: "w", LeaseUntil: t0.Add(time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		outs := make([]store.Outcome, len(res.Jobs))
		for i, j := range res.Jobs {
			outs[i] = store.Outcome{ID: j.ID, Attempt: 1, Claim: j.Claims, State: job.StateCompleted}
		}
		if _, err := s.Finish(ctx, store.FinishParams{Now: t0, Outcomes: outs}); err != nil {
			t.Fatal(err)
		}
	}
	// The statistics reach pg_stat_user_tables when the server flushes
	// them (within a second); wait for that on the server's side.
	if _, err := c.Exec(ctx, `SELECT pg_stat_force_next_flush()`); err != nil {
		t.Log(err)
	}
	deadline := time.Now().Add(deadline)
	for {
		did, err := pgstore.VacuumOnce(s)
		if err != nil {
			t.Fatal(err)
		}
		if did {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("VacuumOnce never vacuumed the churned table")
		}
		// Ask the server for fresh statistics rather than sleep.
		c.Exec(ctx, `SELECT pg_stat_clear_snapshot()`)
	}
	var vacuumed int
	if err := c.QueryRow(ctx, `SELECT vacuum_count FROM pg_stat_user_tables WHERE relid = to_regclass($1)`, s.Schema()+".jobs").Scan(&vacuumed); err != nil || vacuumed == 0 {
		t.Errorf("vacuum_count: %d, %v, want at least 1", vacuumed, err)
	}
}
