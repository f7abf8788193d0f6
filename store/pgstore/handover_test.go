package pgstore_test

import (
	"testing"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/pgstore"
	"github.com/hopperq/hopper/store/storetest"
)

// TestFinishClaimHandsOver: a FinishClaim whose attempts give back slots
// of one queue limited by concurrency alone, and whose claim could take no
// more than those slots or finds the queue full, hands the slots over to
// its claim without the queue's row (decision 109): with the row held by
// another transaction it ends without waiting for it. The claim takes at
// most the slots handed over, fewer if the limit was lowered below the
// running attempts, and gives back what it does not take; the queue's
// running count always equals the attempts that hold a slot.
func TestFinishClaimHandsOver(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name              string
		limit, jobs, runs int // the queue's limit, its jobs, those claimed first
		lowerTo           int // the limit set after the first claim (0: unchanged)
		finish, claim     int // the attempts the FinishClaim ends, its claim's Limit
		hold              bool
		anyQueue          bool // the claim names no queue
		wantClaimed       int
		wantRunning       int
		wantHeld          bool
	}{
		// Full: the claim could not take more than the slots handed over.
		{name: "full", limit: 2, jobs: 4, runs: 2, finish: 1, claim: 5, hold: true, wantClaimed: 1, wantRunning: 2, wantHeld: true},
		{name: "full, any queue", limit: 2, jobs: 4, runs: 2, finish: 1, claim: 5, hold: true, anyQueue: true, wantClaimed: 1, wantRunning: 2, wantHeld: true},
		// Room left, but the claim asks for no more than it was handed.
		{name: "limit within the slots", limit: 10, jobs: 6, runs: 2, finish: 2, claim: 2, hold: true, wantClaimed: 2, wantRunning: 2},
		// Nothing left to claim: the slots are given back (the row is
		// taken then, so it is not held here).
		{name: "given back", limit: 2, jobs: 2, runs: 2, finish: 2, claim: 2, wantClaimed: 0, wantRunning: 0},
		// A limit lowered below the running attempts starts nothing new.
		{name: "lowered", limit: 3, jobs: 5, runs: 3, lowerTo: 1, finish: 1, claim: 1, wantClaimed: 0, wantRunning: 2, wantHeld: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			s := openStore(t, pgstore.Options{})
			limit := tc.limit
			if _, err := s.SetQueue(ctx, store.SetQueueParams{Now: t0, Name: "q", Concurrency: &limit}); err != nil {
				t.Fatal(err)
			}
			for range tc.jobs {
				enqueue(t, s, storetest.KeyedJob(t, "q", ""))
			}
			first := claimN(t, s, tc.runs)
			if tc.lowerTo > 0 {
				if _, err := s.SetQueue(ctx, store.SetQueueParams{Now: t0, Name: "q", Concurrency: &tc.lowerTo}); err != nil {
					t.Fatal(err)
				}
			}
			done := make(chan error, 1)
			var got store.ClaimResult
			finishClaim := func() {
				outs := make([]store.Outcome, tc.finish)
				for i, j := range first[:tc.finish] {
					outs[i] = store.Outcome{ID: j.ID, Attempt: j.Attempt, Claim: j.Claims, State: job.StateCompleted}
				}
				cp := store.ClaimParams{Now: t0.Add(time.Second), Limit: tc.claim, Worker: "w", LeaseUntil: t0.Add(time.Minute), Queues: []string{"q"}}
				if tc.anyQueue {
					cp.Queues = nil
				}
				var err error
				_, got, err = s.FinishClaim(ctx, store.FinishParams{Now: t0.Add(time.Second), Outcomes: outs}, cp)
				done <- err
			}
			if tc.hold {
				c, tx := holdRows(t, `SELECT 1 FROM `+s.Schema()+`.queues WHERE name = 'q' FOR UPDATE`)
				go finishClaim()
				endsWithoutWaiting(t, c.PgConn().PID(), done)
				if err := tx.Rollback(ctx); err != nil {
					t.Fatal(err)
				}
			} else {
				finishClaim()
				if err := <-done; err != nil {
					t.Fatal(err)
				}
			}
			if len(got.Jobs) != tc.wantClaimed || got.Held != tc.wantHeld {
				t.Errorf("the claim took %d jobs, Held %v; want %d, %v", len(got.Jobs), got.Held, tc.wantClaimed, tc.wantHeld)
			}
			running, slots := slotCounts(t, s, "q")
			if running != tc.wantRunning || slots != tc.wantRunning {
				t.Errorf("queue q counts %d running, %d attempts hold a slot; want %d", running, slots, tc.wantRunning)
			}
		})
	}
}

// TestFinishClaimHandsOverOnlyAlone: a FinishClaim whose claim may take
// from another limited or throttled queue, or whose attempts give back
// slots of two queues, takes the queues' rows in name order as before: it
// waits for the row another transaction holds, and counts stay exact.
func TestFinishClaimHandsOverOnlyAlone(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		finish []string // the queues of the attempts it ends
		claim  []string // the queues its claim names
	}{
		{"claim names another limited queue", []string{"q"}, []string{"q", "r"}},
		{"slots of two queues", []string{"q", "r"}, []string{"q"}},
		{"claim names a throttled queue", []string{"q"}, []string{"q", "t"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			s := openStore(t, pgstore.Options{})
			one := 1
			for _, q := range []string{"q", "r"} {
				if _, err := s.SetQueue(ctx, store.SetQueueParams{Now: t0, Name: q, Concurrency: &one}); err != nil {
					t.Fatal(err)
				}
				enqueue(t, s, storetest.KeyedJob(t, q, ""), storetest.KeyedJob(t, q, ""))
			}
			if _, err := s.SetQueue(ctx, store.SetQueueParams{Now: t0, Name: "t", Rate: &store.Rate{N: 100, Period: time.Second}}); err != nil {
				t.Fatal(err)
			}
			enqueue(t, s, storetest.KeyedJob(t, "t", ""))
			var outs []store.Outcome
			for _, q := range tc.finish {
				res, err := s.Claim(ctx, store.ClaimParams{Now: t0, Limit: 1, Worker: "w", LeaseUntil: t0.Add(time.Minute), Queues: []string{q}})
				if err != nil || len(res.Jobs) != 1 {
					t.Fatalf("claimed %d jobs of %s (%v), want 1", len(res.Jobs), q, err)
				}
				j := res.Jobs[0]
				outs = append(outs, store.Outcome{ID: j.ID, Attempt: j.Attempt, Claim: j.Claims, State: job.StateCompleted})
			}
			if err := waitsForRows(t, `SELECT 1 FROM `+s.Schema()+`.queues WHERE name = 'q' FOR UPDATE`, func() error {
				_, _, err := s.FinishClaim(ctx, store.FinishParams{Now: t0.Add(time.Second), Outcomes: outs},
					store.ClaimParams{Now: t0.Add(time.Second), Limit: len(outs), Worker: "w", LeaseUntil: t0.Add(time.Minute), Queues: tc.claim})
				return err
			}); err != nil {
				t.Fatal(err)
			}
			for _, q := range []string{"q", "r"} {
				if running, slots := slotCounts(t, s, q); running != slots || running > 1 {
					t.Errorf("queue %s counts %d running, %d attempts hold a slot; want equal, at most its limit 1", q, running, slots)
				}
			}
		})
	}
}

// claimN claims n jobs of queue "q" at t0 and fails the test if it gets
// another number.
func claimN(t *testing.T, s *pgstore.Store, n int) []*job.Job {
	t.Helper()
	res, err := s.Claim(t.Context(), store.ClaimParams{Now: t0, Limit: n, Worker: "w", LeaseUntil: t0.Add(time.Minute), Queues: []string{"q"}})
	if err != nil || len(res.Jobs) != n {
		t.Fatalf("claimed %d jobs (%v), want %d", len(res.Jobs), err, n)
	}
	return res.Jobs
}

// slotCounts returns queue's running count and the number of its jobs that
// hold a slot.
func slotCounts(t *testing.T, s *pgstore.Store, queue string) (running, slots int) {
	t.Helper()
	if err := conn(t).QueryRow(t.Context(), `SELECT (SELECT running FROM `+s.Schema()+`.queues WHERE name = $1),
		(SELECT count(*) FROM `+s.Schema()+`.jobs WHERE queue = $1 AND slot)`, queue).Scan(&running, &slots); err != nil {
		t.Fatal(err)
	}
	return running, slots
}

// endsWithoutWaiting returns once done reports no error; it fails the test
// if a backend waits for a lock the backend pid holds first.
func endsWithoutWaiting(t *testing.T, pid uint32, done <-chan error) {
	t.Helper()
	ended, err := blockedOrDone(t, pid, done)
	if !ended {
		t.Fatal("the FinishClaim waits for the queue's row")
	}
	if err != nil {
		t.Fatal(err)
	}
}
