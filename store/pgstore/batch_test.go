package pgstore_test

import (
	"testing"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/pgstore"
)

// TestBatchedMaintenance: Rescue, RetryDead and Purge work in transactions
// of 1,000 jobs; over more than that they still move every job, once.
func TestBatchedMaintenance(t *testing.T) {
	t.Parallel()
	s := openStore(t, pgstore.Options{})
	ctx := t.Context()
	const n = 2500
	for i := 0; i < n; i += 500 {
		js := make([]*job.Job, 500)
		for k := range js {
			js[k] = newJob(t, "k")
		}
		enqueue(t, s, js...)
	}
	claimAll := func(now time.Time, lease time.Duration) []*job.Job {
		t.Helper()
		res, err := s.Claim(ctx, store.ClaimParams{Now: now, Limit: n, Worker: "w", LeaseUntil: now.Add(lease)})
		if err != nil || len(res.Jobs) != n {
			t.Fatalf("Claim: %d jobs, %v, want %d", len(res.Jobs), err, n)
		}
		return res.Jobs
	}
	claimAll(t0, time.Second)
	moved, err := s.Rescue(ctx, store.RescueParams{Now: t0.Add(2 * time.Second)})
	if err != nil || len(moved) != n {
		t.Fatalf("Rescue: %d jobs, %v, want %d", len(moved), err, n)
	}
	seen := map[job.ID]bool{}
	for _, j := range moved {
		if seen[j.ID] || j.State != job.StateAvailable || len(j.Attempts) != 1 {
			t.Fatalf("rescued job %+v (seen before: %v)", j, seen[j.ID])
		}
		seen[j.ID] = true
	}
	now := t0.Add(3 * time.Second)
	js := claimAll(now, time.Minute)
	outs := make([]store.Outcome, len(js))
	for i, j := range js {
		outs[i] = store.Outcome{ID: j.ID, Attempt: j.Attempt, Claim: j.Claims, State: job.StateDead, Error: "e"}
	}
	if _, err := s.Finish(ctx, store.FinishParams{Now: now, Outcomes: outs}); err != nil {
		t.Fatal(err)
	}
	if k, err := s.RetryDead(ctx, store.RetryDeadParams{Now: now, All: true}); err != nil || k != n {
		t.Fatalf("RetryDead(All): %d, %v, want %d", k, err, n)
	}
	js = claimAll(now, time.Minute)
	for i, j := range js {
		outs[i] = store.Outcome{ID: j.ID, Attempt: j.Attempt, Claim: j.Claims, State: job.StateCompleted}
	}
	if _, err := s.Finish(ctx, store.FinishParams{Now: now, Outcomes: outs}); err != nil {
		t.Fatal(err)
	}
	if k, err := s.Purge(ctx, store.PurgeParams{States: []job.State{job.StateCompleted}, KeepNewest: 100}); err != nil || k != n-100 {
		t.Fatalf("Purge(KeepNewest 100): %d, %v, want %d", k, err, n-100)
	}
	if k, err := s.Purge(ctx, store.PurgeParams{States: []job.State{job.StateCompleted}, All: true}); err != nil || k != 100 {
		t.Fatalf("Purge(All): %d, %v, want 100", k, err)
	}
}

// TestFinishSameJobTwice: two outcomes of one attempt in one Finish call
// apply in order: the first wins, the second finds the lease gone.
func TestFinishSameJobTwice(t *testing.T) {
	t.Parallel()
	s := openStore(t, pgstore.Options{})
	ctx := t.Context()
	ids := enqueue(t, s, newJob(t, "a"), newJob(t, "b"))
	if _, err := s.Claim(ctx, store.ClaimParams{Now: t0, Limit: 2, Worker: "w", LeaseUntil: t0.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	reached, err := s.Finish(ctx, store.FinishParams{Now: t0, Outcomes: []store.Outcome{
		{ID: ids[1], Attempt: 1, Claim: 1, State: job.StateRetrying, RunAt: t0.Add(time.Hour), Error: "e"},
		{ID: ids[0], Attempt: 1, Claim: 1, State: job.StateCompleted},
		{ID: ids[1], Attempt: 1, Claim: 1, State: job.StateCompleted},
	}})
	want := []job.State{job.StateRetrying, job.StateCompleted, 0}
	if err != nil || len(reached) != 3 || reached[0] != want[0] || reached[1] != want[1] || reached[2] != want[2] {
		t.Fatalf("Finish: got %v, %v, want %v", reached, err, want)
	}
	if j, _ := s.Get(ctx, ids[1]); j.State != job.StateRetrying || len(j.Attempts) != 1 {
		t.Errorf("job named twice: %+v", j)
	}
}
