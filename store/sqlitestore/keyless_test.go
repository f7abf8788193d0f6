package sqlitestore_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/sqlitestore"
	"github.com/hopperq/hopper/store/storetest"
)

// hotKeyQueue makes queue "q" of s keyed (one job per key at a time) with
// n jobs of key "hot" and one of key "cold", and claims the first of each
// (returned).
func hotKeyQueue(t *testing.T, s *sqlitestore.Store, n int) []*job.Job {
	t.Helper()
	one := 1
	if _, err := s.SetQueue(t.Context(), store.SetQueueParams{Now: t0, Name: "q", KeyConcurrency: &one}); err != nil {
		t.Fatal(err)
	}
	jobs := make([]*job.Job, 0, n+1)
	for range n {
		jobs = append(jobs, keyedJob(t, "q", "hot"))
	}
	enqueue(t, s, append(jobs, keyedJob(t, "q", "cold"))...)
	res, err := s.Claim(t.Context(), store.ClaimParams{Now: t0, Limit: 5, Worker: "w", LeaseUntil: t0.Add(time.Hour),
		Queues: []string{"q"}})
	if err != nil || len(res.Jobs) != 2 {
		t.Fatalf("first claim: %d jobs, %v; want hot's and cold's", len(res.Jobs), err)
	}
	return res.Jobs
}

// keyedJob returns a job of queue with key (none if "").
func keyedJob(t *testing.T, queue, key string) *job.Job { return storetest.KeyedJob(t, queue, key) }

// claimQ claims up to 5 jobs of queue "q" through s and returns their keys.
func claimQ(t *testing.T, s *sqlitestore.Store) []string { return storetest.ClaimKeys(t, s, "q") }

// wantNone claims n times through s and fails if a claim takes a job.
func wantNone(t *testing.T, s *sqlitestore.Store, n int) {
	t.Helper()
	for range n {
		if got := claimQ(t, s); len(got) != 0 {
			t.Fatalf("claim with hot at its limit: keys %q, want none", got)
		}
	}
}

// TestKeylessReadOnce: the claims of a keyed queue whose walk wraps
// around (a hot key at its limit, its backlog waiting) and which holds no
// job without a key read its keyless jobs once, not at every claim
// (decision 106); enqueues of keyed jobs into the queue and of keyless
// jobs into another queue leave the hint be, and a keyless job this
// Store enqueues into the queue is claimed at the next claim.
func TestKeylessReadOnce(t *testing.T) {
	t.Parallel()
	s := open(t, filepath.Join(t.TempDir(), "hopper.db"), sqlitestore.Options{})
	hotKeyQueue(t, s, 100)
	wantNone(t, s, 5)
	enqueue(t, s, keyedJob(t, "q", "hot"), keyedJob(t, "other", ""))
	wantNone(t, s, 5)
	if n := sqlitestore.KeylessReads(s); n != 1 {
		t.Errorf("keyless reads over 11 claims: %d, want 1", n)
	}
	enqueue(t, s, keyedJob(t, "q", ""))
	if got := claimQ(t, s); len(got) != 1 || got[0] != "" {
		t.Errorf("claim after a keyless enqueue by the same Store: keys %q, want the keyless job", got)
	}
}

// TestKeylessOtherStore: a keyless job another Store on the file (another
// process) enqueues, or an application's transaction (EnqueueTx), is
// claimed at the next claim, however long the hint held before; the
// claims after read the keyless jobs once more, and then rest again.
func TestKeylessOtherStore(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "hopper.db")
	a := open(t, path, sqlitestore.Options{})
	b := open(t, path, sqlitestore.Options{})
	hotKeyQueue(t, a, 100)
	wantNone(t, a, 3)
	enqueue(t, b, keyedJob(t, "q", ""))
	if got := claimQ(t, a); len(got) != 1 || got[0] != "" {
		t.Fatalf("claim after another Store's keyless enqueue: keys %q, want the keyless job", got)
	}
	wantNone(t, a, 3)
	db := appDB(t, path)
	tx := begin(t, db)
	enqueueTx(t, a, tx, keyedJob(t, "q", ""))
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := claimQ(t, a); len(got) != 1 || got[0] != "" {
		t.Fatalf("claim after an EnqueueTx's commit: keys %q, want the keyless job", got)
	}
	wantNone(t, a, 3)
	// The first read, one after each enqueue (whose claim found the
	// job) and one more after it.
	if n := sqlitestore.KeylessReads(a); n != 5 {
		t.Errorf("keyless reads: %d, want 5", n)
	}
}

// TestKeylessFinishSet: a keyless job that a Finish of several outcomes
// (one statement for them all) sends back to available is claimed at the
// next claim.
func TestKeylessFinishSet(t *testing.T) {
	t.Parallel()
	s := open(t, filepath.Join(t.TempDir(), "hopper.db"), sqlitestore.Options{})
	first := hotKeyQueue(t, s, 10)
	enqueue(t, s, keyedJob(t, "q", "cold"), keyedJob(t, "q", ""))
	res, err := s.Claim(t.Context(), store.ClaimParams{Now: t0, Limit: 5, Worker: "w", LeaseUntil: t0.Add(time.Hour),
		Queues: []string{"q"}})
	if err != nil || len(res.Jobs) != 1 || res.Jobs[0].Key != "" {
		t.Fatalf("claim: %v, %v; want the keyless job (cold at its limit)", res.Jobs, err)
	}
	wantNone(t, s, 3)
	var out []store.Outcome
	for _, j := range append(first, res.Jobs[0]) { // cold's, the keyless
		st := job.StateCompleted
		switch j.Key {
		case "hot":
			continue
		case "":
			st = job.StateAvailable
		}
		out = append(out, store.Outcome{ID: j.ID, Attempt: j.Attempt, Claim: j.Claims, State: st,
			Record: job.Attempt{Attempt: j.Attempt, StartedAt: t0, Outcome: st.String()}})
	}
	reached, err := s.Finish(t.Context(), store.FinishParams{Now: t0, Outcomes: out})
	if err != nil || reached[0] != job.StateCompleted || reached[1] != job.StateAvailable {
		t.Fatalf("Finish: %v, %v; want completed and available", reached, err)
	}
	if got := claimQ(t, s); len(got) != 2 || got[0] != "cold" || got[1] != "" {
		t.Errorf("claim after the Finish: keys %q, want [cold \"\"]", got)
	}
}
