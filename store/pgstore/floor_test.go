package pgstore_test

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/pgstore"
)

// claimIDs claims up to limit jobs (of the given queues, or any) at now
// and returns their IDs in claim order.
func claimIDs(t *testing.T, s *pgstore.Store, now time.Time, limit int, queues ...string) []job.ID {
	t.Helper()
	res, err := s.Claim(t.Context(), store.ClaimParams{Now: now, Limit: limit, Worker: "w", LeaseUntil: now.Add(time.Hour), Queues: queues})
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	ids := make([]job.ID, len(res.Jobs))
	for i, j := range res.Jobs {
		ids[i] = j.ID
	}
	return ids
}

// prioJob returns a job of the default queue with priority prio, to run
// at runAt (available then, scheduled if later than t0).
func prioJob(t *testing.T, prio int, runAt time.Time) *job.Job {
	t.Helper()
	j := &job.Job{Kind: "k", Queue: job.DefaultQueue, MaxAttempts: 3, Priority: prio, RunAt: runAt}
	if err := j.Validate(t0); err != nil {
		t.Fatal(err)
	}
	return j
}

// TestClaimStartsAtFloor: with a transaction held open, the entries the
// claims leave in jobs_claim cannot be removed, and a claim that started at
// the front of its queue would check every one of them. 100 claims of 10
// jobs read ~2k entries with floors; from the front (the same claims
// behind PgBouncer, which has no floors) they read ~50k.
func TestClaimStartsAtFloor(t *testing.T) {
	t.Parallel()
	dbURL, db := freshDatabase(t)
	ctx := t.Context()
	side := connTo(t, dbURL)
	if _, err := side.Exec(ctx, `BEGIN ISOLATION LEVEL REPEATABLE READ`); err != nil {
		t.Fatal(err)
	}
	if _, err := side.Exec(ctx, `SELECT txid_current()`); err != nil {
		t.Fatal(err)
	}
	const n, batch = 1000, 10
	run := func(schema string, opts pgstore.Options, queues ...string) {
		opts.Schema, opts.PollInterval = schema, time.Hour
		s := mustOpenDB(t, dbURL, opts)
		jobs := make([]*job.Job, n)
		for i := range jobs {
			jobs[i] = newJob(t, "k")
		}
		enqueue(t, s, jobs...)
		seen := make(map[job.ID]bool)
		for range n / batch {
			for _, id := range claimIDs(t, s, t0, batch, queues...) {
				if seen[id] {
					t.Fatalf("%s: job %d claimed twice", schema, id)
				}
				seen[id] = true
			}
		}
		if len(seen) != n {
			t.Fatalf("%s: %d jobs claimed, want %d", schema, len(seen), n)
		}
		s.Close()
	}
	run("floors_all", pgstore.Options{})
	run("floors_given", pgstore.Options{}, job.DefaultQueue)
	run("front", pgstore.Options{PgBouncer: true})
	if _, err := side.Exec(ctx, `COMMIT`); err != nil {
		t.Fatal(err)
	}
	front, _ := indexStats(t, side, db, "front", "jobs_claim")
	for _, schema := range []string{"floors_all", "floors_given"} {
		read, _ := indexStats(t, side, db, schema, "jobs_claim")
		t.Logf("%d claims of %d with a transaction open: %d entries of jobs_claim read (%s), %d from the front", n/batch, batch, read, schema, front)
		if read*5 > front {
			t.Errorf("%s: the claims read %d entries of jobs_claim, and %d from the front; want under a fifth", schema, read, front)
		}
	}
}

// TestFloorLoweredByAnotherStore: a job another Store makes available
// below this Store's floor — more urgent, or committed late by an
// application's transaction — is claimed once its notification arrives,
// not at the next refresh (an hour here).
func TestFloorLoweredByAnotherStore(t *testing.T) {
	t.Parallel()
	schema := freshSchema(t)
	a := openIn(t, schema, pgstore.Options{})
	b := quiet(t, schema)
	ids := enqueue(t, a, prioJob(t, 0, t0), prioJob(t, 0, t0), prioJob(t, 0, t0), prioJob(t, 0, t0))
	waitWake(t, b, "Enqueue")
	for _, want := range ids[:2] {
		if got := claimIDs(t, b, t0, 1); len(got) != 1 || got[0] != want {
			t.Fatalf("Claim: got %v, want [%d]", got, want)
		}
	}
	// b's floor is at ids[1] now. A job of the same priority and run-at
	// goes above it: its notification carries its ID (the INSERT's
	// sequence completes the payload), and changes nothing.
	key := func(prio int, id job.ID) string { return fmt.Sprintf("%d/%d/%d", prio, t0.UnixMicro(), id) }
	if got := pgstore.Floor(b, job.DefaultQueue); got != key(0, ids[1]) {
		t.Fatalf("b's floor: %s, want %s", got, key(0, ids[1]))
	}
	drain(b)
	enqueue(t, a, prioJob(t, 0, t0), prioJob(t, 0, t0))
	waitWake(t, b, "Enqueue")
	if got := pgstore.Floor(b, job.DefaultQueue); got != key(0, ids[1]) {
		t.Errorf("b's floor after jobs above it were enqueued: %s, want %s", got, key(0, ids[1]))
	}
	// An urgent job goes below it.
	urgent := enqueue(t, a, prioJob(t, 0, t0), prioJob(t, -10, t0))
	waitWake(t, b, "Enqueue of an urgent job")
	if got := pgstore.Floor(b, job.DefaultQueue); got != key(-10, urgent[1]) {
		t.Errorf("b's floor after an urgent job's notification: %s, want %s", got, key(-10, urgent[1]))
	}
	if got := claimIDs(t, b, t0, 1); len(got) != 1 || got[0] != urgent[1] {
		t.Fatalf("Claim after an urgent job's notification: got %v, want [%d]", got, urgent[1])
	}
	// A job enqueued in a transaction that commits after b's claims moved
	// on: it is below b's floor (its run-at is earlier).
	c := conn(t)
	tx, err := c.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	late, err := a.EnqueueTx(t.Context(), tx, store.EnqueueParams{Now: t0, Jobs: []*job.Job{prioJob(t, 0, t0.Add(-time.Hour))}})
	if err != nil {
		t.Fatal(err)
	}
	if got := claimIDs(t, b, t0, 1); len(got) != 1 || got[0] != ids[2] {
		t.Fatalf("Claim: got %v, want [%d]", got, ids[2])
	}
	drain(b)
	if err := tx.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	waitWake(t, b, "commit of EnqueueTx")
	if got := claimIDs(t, b, t0, 1); len(got) != 1 || got[0] != late[0].ID {
		t.Fatalf("Claim after the commit: got %v, want [%d]", got, late[0].ID)
	}
}

// TestClaimTakesPromotedBelowFloor: a claim's own promotion may make jobs
// available below its floor; the claim takes them in claim order, at
// once.
func TestClaimTakesPromotedBelowFloor(t *testing.T) {
	t.Parallel()
	for _, queues := range [][]string{nil, {job.DefaultQueue}} {
		s := quiet(t, freshSchema(t)) // listening: its connection resets the floors
		first := enqueue(t, s, prioJob(t, 0, t0))
		if got := claimIDs(t, s, t0, 1, queues...); len(got) != 1 || got[0] != first[0] {
			t.Fatalf("queues %v: Claim: got %v, want %v", queues, got, first)
		}
		ids := enqueue(t, s, prioJob(t, 0, t0), prioJob(t, -5, t0.Add(time.Second)))
		if got := claimIDs(t, s, t0.Add(2*time.Second), 1, queues...); len(got) != 1 || got[0] != ids[1] {
			t.Errorf("queues %v: Claim when the urgent job is due: got %v, want [%d] (promoted below the floor)", queues, got, ids[1])
		}
	}
}

// TestProbe: the probe that refreshes slow fronts finds the first
// available job of each queue, and the queues that have only waiting
// jobs.
func TestProbe(t *testing.T) {
	t.Parallel()
	s := openStore(t, pgstore.Options{})
	in := func(q string, prio int, runAt time.Time) *job.Job {
		j := prioJob(t, prio, runAt)
		j.Queue = q
		return j
	}
	ids := enqueue(t, s, in("a", 3, t0), in("a", 1, t0.Add(-time.Second)), in("a", 1, t0), in("b", 0, t0), in("c", -9, t0.Add(time.Hour)))
	key := func(prio int, runAt time.Time, id job.ID) string {
		return fmt.Sprintf("%d/%d/%d", prio, runAt.UnixMicro(), id)
	}
	want := map[string]string{"a": key(1, t0.Add(-time.Second), ids[1]), "b": key(0, t0, ids[3]), "c": "none"}
	got, err := pgstore.Probe(s, nil)
	if err != nil || !maps.Equal(got, want) {
		t.Errorf("Probe of every queue: %v, %v; want %v", got, err, want)
	}
	got, err = pgstore.Probe(s, []string{"b", "d"})
	if want := map[string]string{"b": key(0, t0, ids[3]), "d": "none"}; err != nil || !maps.Equal(got, want) {
		t.Errorf("Probe of b and d: %v, %v; want %v", got, err, want)
	}
}

// TestFloorLoweredByOwnWrites: Rescue, Reschedule and FireSchedule make jobs available
// below the floor of the Store that made them; its next claim takes them.
func TestFloorLoweredByOwnWrites(t *testing.T) {
	t.Parallel()
	s := quiet(t, freshSchema(t)) // no refresh for an hour
	ids := enqueue(t, s, prioJob(t, 0, t0), prioJob(t, 5, t0), prioJob(t, 5, t0))
	for _, want := range ids[:2] {
		if got := claimIDs(t, s, t0, 1); len(got) != 1 || got[0] != want {
			t.Fatalf("Claim: got %v, want [%d]", got, want)
		}
	}
	// Both leases expire. Rescued, they run at once; the first, of
	// priority 0, is then below the floor (ids[1], of priority 5).
	now := t0.Add(2 * time.Hour)
	if _, err := s.Rescue(t.Context(), store.RescueParams{Now: now}); err != nil {
		t.Fatal(err)
	}
	if got := claimIDs(t, s, now, 1); len(got) != 1 || got[0] != ids[0] {
		t.Errorf("Claim after Rescue: got %v, want [%d]", got, ids[0])
	}
	// A scheduled job rescheduled to before the floor's run-at (now).
	later := enqueue(t, s, prioJob(t, 0, t0.Add(24*time.Hour)))
	if _, err := s.Reschedule(t.Context(), store.RescheduleParams{ID: later[0], RunAt: t0, Now: now}); err != nil {
		t.Fatal(err)
	}
	if got := claimIDs(t, s, now, 1); len(got) != 1 || got[0] != later[0] {
		t.Errorf("Claim after Reschedule: got %v, want [%d]", got, later[0])
	}
	// A schedule's tick of a more urgent priority.
	sc := &job.Schedule{Name: "tick", Spec: "@every 1m", Kind: "k", NextRunAt: t0, CreatedAt: t0, Options: job.Options{Queue: job.DefaultQueue, Priority: -1, MaxAttempts: 3}}
	if err := s.AddSchedule(t.Context(), store.AddScheduleParams{Schedule: sc}); err != nil {
		t.Fatal(err)
	}
	tick := sc.NewJob(t0)
	if err := tick.Validate(now); err != nil {
		t.Fatal(err)
	}
	fired, err := s.FireSchedule(t.Context(), store.FireScheduleParams{Now: now, Name: sc.Name, FireTime: t0, Next: t0.Add(time.Minute), Job: tick})
	if err != nil || !fired.Fired {
		t.Fatalf("FireSchedule: %+v, %v", fired, err)
	}
	if got := claimIDs(t, s, now, 1); len(got) != 1 || got[0] != fired.ID {
		t.Errorf("Claim after FireSchedule: got %v, want [%d]", got, fired.ID)
	}
}

// TestFailedRefreshStaysDue: a claim that was to read the fronts (here a
// refresh forced by a reset) and failed leaves that refresh due, so the
// next claim reads the fronts and takes a job that nothing announced below
// the floor, rather than starting at the floor.
func TestFailedRefreshStaysDue(t *testing.T) {
	t.Parallel()
	schema := freshSchema(t)
	s := quiet(t, schema) // no periodic refresh for an hour
	ids := enqueue(t, s, prioJob(t, 0, t0), prioJob(t, 0, t0), prioJob(t, 0, t0))
	if got := claimIDs(t, s, t0, 1); len(got) != 1 || got[0] != ids[0] {
		t.Fatalf("Claim: got %v, want [%d]", got, ids[0])
	}
	// The last job moves below the floor (ids[1]) without a notification.
	if _, err := conn(t).Exec(t.Context(), `UPDATE `+schema+`.jobs SET priority = -10 WHERE id = $1`, int64(ids[2])); err != nil {
		t.Fatal(err)
	}
	pgstore.ResetFloors(s)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.Claim(ctx, store.ClaimParams{Now: t0, Limit: 1, Worker: "w", LeaseUntil: t0.Add(time.Hour)}); err == nil {
		t.Fatal("Claim with a cancelled context succeeded")
	}
	if got := claimIDs(t, s, t0, 1); len(got) != 1 || got[0] != ids[2] {
		t.Errorf("Claim after a failed refresh: got %v, want [%d] (below the floor, found by reading the front)", got, ids[2])
	}
}
