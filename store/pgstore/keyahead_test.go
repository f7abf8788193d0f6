package pgstore_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/pgstore"
)

// claimIn claims up to limit jobs of queues through s at t0 and returns
// the queue and key of each, in the claim's order ("queue/key").
func claimIn(t *testing.T, s *pgstore.Store, limit int, queues ...string) []string {
	t.Helper()
	res, err := s.Claim(t.Context(), store.ClaimParams{Now: t0, Limit: limit, Worker: "w", LeaseUntil: t0.Add(time.Hour),
		Queues: queues})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, j := range res.Jobs {
		got = append(got, j.Queue+"/"+j.Key)
	}
	return got
}

// setKeyLimit sets the limit per key of queue (0 clears it).
func setKeyLimit(t *testing.T, s *pgstore.Store, queue string, n int) {
	t.Helper()
	if _, err := s.SetQueue(t.Context(), store.SetQueueParams{Now: t0, Name: queue, KeyConcurrency: &n}); err != nil {
		t.Fatal(err)
	}
}

// jobsOf returns a job of queue per key.
func jobsOf(t *testing.T, queue string, keys ...string) []*job.Job {
	var jobs []*job.Job
	for _, k := range keys {
		j := &job.Job{Kind: "k", Queue: queue, Key: k, MaxAttempts: 3}
		if err := j.Validate(t0); err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, j)
	}
	return jobs
}

// TestClaimAhead: once a claim of a set of queues found keyed queues, the
// next claim of that set sends the keyed claim's first batch with the
// plain claim's (decision 108), and takes the same jobs: a plain queue's
// first, then the keyed queue's keys in turn, within their limit.
func TestClaimAhead(t *testing.T) {
	t.Parallel()
	s := openStore(t, pgstore.Options{})
	setKeyLimit(t, s, "q", 1)
	enqueue(t, s, jobsOf(t, "q", "a", "a", "b", "b", "c")...)
	enqueue(t, s, jobsOf(t, "p", "", "")...)
	if got, want := claimIn(t, s, 3, "p", "q"), []string{"p/", "p/", "q/a"}; !slices.Equal(got, want) {
		t.Fatalf("first claim: %q, want %q", got, want)
	}
	if got, want := claimIn(t, s, 1, "p", "q"), []string{"q/b"}; !slices.Equal(got, want) {
		t.Fatalf("second claim: %q, want %q", got, want)
	}
	if n := pgstore.AheadClaims(s); n != 1 {
		t.Fatalf("claims ahead after the second claim: %d, want 1", n)
	}
	if got, want := claimIn(t, s, 5, "p", "q"), []string{"q/c"}; !slices.Equal(got, want) {
		t.Fatalf("third claim (a and b at their limit): %q, want %q", got, want)
	}
	if n := pgstore.AheadClaims(s); n != 2 {
		t.Fatalf("claims ahead after the third claim: %d, want 2", n)
	}
	queueRowFree(t, s, "q")
}

// TestClaimAheadWrongGuess: a guess that is wrong changes nothing of what
// a claim takes. A queue that became keyed is claimed in the same claim;
// one that stopped being keyed, left out of the plain claim, wakes the
// Store to claim it again; a plain claim that fills the claim leaves the
// keyed queues' jobs. None leaves a queue's row locked.
func TestClaimAheadWrongGuess(t *testing.T) {
	t.Parallel()
	s := openStore(t, pgstore.Options{})
	setKeyLimit(t, s, "q", 1)
	enqueue(t, s, jobsOf(t, "q", "a", "a")...)
	if got, want := claimIn(t, s, 5, "q", "r"), []string{"q/a"}; !slices.Equal(got, want) {
		t.Fatalf("first claim: %q, want %q", got, want)
	}

	// r becomes keyed: the guess (q) misses it.
	setKeyLimit(t, s, "r", 1)
	enqueue(t, s, jobsOf(t, "r", "x", "x")...)
	if got, want := claimIn(t, s, 5, "q", "r"), []string{"r/x"}; !slices.Equal(got, want) {
		t.Fatalf("claim after r became keyed: %q, want %q", got, want)
	}
	queueRowFree(t, s, "q")

	// q stops being keyed: the guess (q, r) left it out of the plain claim.
	setKeyLimit(t, s, "q", 0)
	drain(s)
	if got := claimIn(t, s, 5, "q", "r"); len(got) != 0 {
		t.Fatalf("claim after q stopped being keyed: %q, want none (q left out, r at its limit)", got)
	}
	select {
	case <-s.Wake():
	default:
		t.Fatal("a claim that left out a queue keyed no longer did not wake the Store")
	}
	if got, want := claimIn(t, s, 5, "q", "r"), []string{"q/a"}; !slices.Equal(got, want) {
		t.Fatalf("claim after the wake: %q, want %q", got, want)
	}
	queueRowFree(t, s, "r")

	// The plain claim fills the claim: r's job stays.
	enqueue(t, s, jobsOf(t, "r", "y")...)
	enqueue(t, s, jobsOf(t, "q", "", "")...)
	if got, want := claimIn(t, s, 2, "q", "r"), []string{"q/", "q/"}; !slices.Equal(got, want) {
		t.Fatalf("claim the plain queue fills: %q, want %q", got, want)
	}
	queueRowFree(t, s, "r")
	if got, want := claimIn(t, s, 2, "q", "r"), []string{"r/y"}; !slices.Equal(got, want) {
		t.Fatalf("claim after: %q, want %q", got, want)
	}
}

// queueRowFree fails the test unless the row of queue can be locked at
// once: no claim left its transaction open.
func queueRowFree(t *testing.T, s *pgstore.Store, queue string) {
	t.Helper()
	c := conn(t)
	tx, err := c.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(t.Context())
	if _, err := tx.Exec(t.Context(), `SELECT 1 FROM `+s.Schema()+`.queues WHERE name = $1 FOR UPDATE NOWAIT`, queue); err != nil {
		t.Fatalf("lock of queue %s's row: %v", queue, err)
	}
}

// TestClaimAheadFails: a claim ahead whose plain transaction fails (here
// cancelled while it waits for a limited queue's row) returns the error,
// takes nothing, leaves no row locked (its connection, in the keyed
// transaction or not, is closed), and the next claim claims as before.
func TestClaimAheadFails(t *testing.T) {
	t.Parallel()
	s := openStore(t, pgstore.Options{})
	setKeyLimit(t, s, "q", 1)
	one := 1
	if _, err := s.SetQueue(t.Context(), store.SetQueueParams{Now: t0, Name: "p", Concurrency: &one}); err != nil {
		t.Fatal(err)
	}
	enqueue(t, s, jobsOf(t, "q", "a", "b")...)
	enqueue(t, s, jobsOf(t, "p", "")...)
	if got, want := claimIn(t, s, 1, "q"), []string{"q/a"}; !slices.Equal(got, want) {
		t.Fatalf("first claim: %q, want %q", got, want)
	}
	if got := claimIn(t, s, 5, "p", "q"); len(got) != 2 { // the set's first claim: p's job and q's b
		t.Fatalf("claim of p and q: %q, want 2 jobs", got)
	}
	enqueue(t, s, jobsOf(t, "q", "c")...)
	enqueue(t, s, jobsOf(t, "p", "")...)
	c, _ := holdRows(t, `SELECT 1 FROM `+s.Schema()+`.queues WHERE name = 'p' FOR UPDATE`)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := s.Claim(ctx, store.ClaimParams{Now: t0, Limit: 5, Worker: "w", LeaseUntil: t0.Add(time.Hour), Queues: []string{"p", "q"}})
		done <- err
	}()
	waitBlockedBy(t, c.PgConn().PID(), done)
	cancel()
	if err := <-done; err == nil {
		t.Fatal("a claim cancelled while it waited returned no error")
	}
	if n := pgstore.AheadClaims(s); n != 0 {
		t.Errorf("claims that went on ahead: %d, want 0", n)
	}
	queueRowFree(t, s, "q")
	c.Close(t.Context()) // p's row is free; p is at its limit
	if got, want := claimIn(t, s, 5, "p", "q"), []string{"q/c"}; !slices.Equal(got, want) {
		t.Errorf("claim after: %q, want %q", got, want)
	}
}
