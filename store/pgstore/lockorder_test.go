package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/pgstore"
	"github.com/hopperq/hopper/store/storetest"
	"github.com/jackc/pgx/v5"
)

// TestFinishLocksKeysInClaimOrder: a Finish and a Rescue take the rows of a
// limited queue and of its keys in the order a claim takes them (the
// queue's row, then its keys' rows in key order), not in the order of
// their jobs. A transaction holds what a claim holds first (the queue's
// row, or the first key's row); once the Finish or Rescue waits for it, the
// rows the claim takes next must still be free (NOWAIT). Taken in job order
// (the job of key "b" comes first), the row of key "b" would be held: the
// claim and the Finish would deadlock, and PostgreSQL would fail one of
// them after deadlock_timeout.
func TestFinishLocksKeysInClaimOrder(t *testing.T) {
	t.Parallel()
	for _, held := range []string{"queue", "first key"} {
		for _, rescue := range []bool{false, true} {
			name := held + "/finish"
			if rescue {
				name = held + "/rescue"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				testLockOrder(t, held, rescue)
			})
		}
	}
}

func testLockOrder(t *testing.T, held string, rescue bool) {
	ctx := t.Context()
	s := openStore(t, pgstore.Options{})
	ten, two := 10, 2
	if _, err := s.SetQueue(ctx, store.SetQueueParams{Now: t0, Name: "q", Concurrency: &ten, KeyConcurrency: &two}); err != nil {
		t.Fatal(err)
	}
	enqueue(t, s, keyedJob(t, "b"), keyedJob(t, "a")) // the job of "b" has the lower ID
	res, err := s.Claim(ctx, store.ClaimParams{Now: t0, Limit: 5, Worker: "w", LeaseUntil: t0.Add(time.Minute), Queues: []string{"q"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Jobs) != 2 {
		t.Fatalf("claimed %d jobs, want 2", len(res.Jobs))
	}

	lock := `SELECT 1 FROM ` + s.Schema() + `.queues WHERE name = 'q' FOR UPDATE`
	if held == "first key" {
		lock = `SELECT 1 FROM ` + s.Schema() + `.queue_keys WHERE queue = 'q' AND key = 'a' FOR UPDATE`
	}
	c, tx := holdRows(t, lock)

	done := make(chan error, 1)
	go func() {
		if rescue {
			_, err := s.Rescue(ctx, store.RescueParams{Now: t0.Add(2 * time.Minute), MaxCrashes: 5})
			done <- err
			return
		}
		outs := make([]store.Outcome, len(res.Jobs))
		for i, j := range res.Jobs {
			outs[i] = store.Outcome{ID: j.ID, Attempt: j.Attempt, Claim: j.Claims, State: job.StateCompleted}
		}
		_, err := s.Finish(ctx, store.FinishParams{Now: t0.Add(time.Second), Outcomes: outs})
		done <- err
	}()
	waitBlockedBy(t, c.PgConn().PID(), done)

	// What the claim takes next: every key's row, in key order.
	if _, err := tx.Exec(ctx, `SELECT 1 FROM `+s.Schema()+`.queue_keys WHERE queue = 'q' ORDER BY key FOR UPDATE NOWAIT`); err != nil {
		t.Fatalf("while the %s waits for the %s's row, a key's row is taken: %v", map[bool]string{false: "Finish", true: "Rescue"}[rescue], held, err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var running, keys int
	if err := c.QueryRow(ctx, `SELECT (SELECT running FROM `+s.Schema()+`.queues WHERE name = 'q'),
		(SELECT count(*) FROM `+s.Schema()+`.queue_keys)`).Scan(&running, &keys); err != nil {
		t.Fatal(err)
	}
	if running != 0 || keys != 0 {
		t.Errorf("after the jobs ended: the queue counts %d running, %d key rows left; want 0 and 0", running, keys)
	}
}

// holdRows begins a transaction on a connection of its own and locks the
// rows lock selects (FOR UPDATE), as a claim holds its first rows; the
// transaction is rolled back when the test ends if it was not committed.
func holdRows(t *testing.T, lock string) (*pgx.Conn, pgx.Tx) {
	t.Helper()
	c := conn(t)
	tx, err := c.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback(context.Background()) })
	if _, err := tx.Exec(t.Context(), lock); err != nil {
		t.Fatal(err)
	}
	return c, tx
}

// waitsForRows runs call while a transaction holds the rows lock selects
// (holdRows), requires it to wait for them (waitBlockedBy), then commits
// that transaction and returns call's error.
func waitsForRows(t *testing.T, lock string, call func() error) error {
	t.Helper()
	c, tx := holdRows(t, lock)
	done := make(chan error, 1)
	go func() { done <- call() }()
	waitBlockedBy(t, c.PgConn().PID(), done)
	if err := tx.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	return <-done
}

// waitBlockedBy returns once a backend waits for a lock that the backend
// pid holds; it fails the test if done is sent first (the statement
// expected to wait ended) or after a minute.
func waitBlockedBy(t *testing.T, pid uint32, done <-chan error) {
	t.Helper()
	if ended, err := blockedOrDone(t, pid, done); ended {
		t.Fatalf("ended (error %v) without waiting for the rows held", err)
	}
}

// blockedOrDone waits until either a backend waits for a lock that the
// backend pid holds (ended false) or done is sent (ended true, with what
// was sent); it fails the test after a minute.
func blockedOrDone(t *testing.T, pid uint32, done <-chan error) (ended bool, err error) {
	t.Helper()
	admin := conn(t)
	for deadline := time.Now().Add(time.Minute); ; {
		select {
		case err := <-done:
			return true, err
		default:
		}
		var n int
		if err := admin.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`,
			int32(pid)).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return false, nil
		}
		if time.Now().After(deadline) {
			t.Fatal("neither ended nor waited for the rows held within a minute")
		}
	}
}

// TestFinishClaimLocksQueuesInOrder: a FinishClaim takes the rows of the
// limited queues, those its outcomes give slots back to and those its
// claim takes slots of, in name order, as a claim does. Its Finish gives
// back a slot of queue "s"; its claim takes "r" and "s". A transaction
// holds "r", as a claim holds it first; once the FinishClaim waits for it,
// the row of "s" must still be free. Locked by the Finish before the
// claim locked "r", "s" would be held: the claim that holds "r" and waits
// for "s" and the FinishClaim would deadlock.
func TestFinishClaimLocksQueuesInOrder(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openStore(t, pgstore.Options{})
	ten := 10
	for _, q := range []string{"r", "s"} {
		if _, err := s.SetQueue(ctx, store.SetQueueParams{Now: t0, Name: q, Concurrency: &ten}); err != nil {
			t.Fatal(err)
		}
	}
	enqueue(t, s, storetest.KeyedJob(t, "s", ""))
	res, err := s.Claim(ctx, store.ClaimParams{Now: t0, Limit: 5, Worker: "w", LeaseUntil: t0.Add(time.Minute), Queues: []string{"s"}})
	if err != nil || len(res.Jobs) != 1 {
		t.Fatalf("claimed %d jobs (%v), want 1", len(res.Jobs), err)
	}
	enqueue(t, s, storetest.KeyedJob(t, "r", ""))

	c, tx := holdRows(t, `SELECT 1 FROM `+s.Schema()+`.queues WHERE name = 'r' FOR UPDATE`)
	type result struct {
		got int
		err error
	}
	done := make(chan error, 1)
	claimed := make(chan result, 1)
	go func() {
		j := res.Jobs[0]
		_, cr, err := s.FinishClaim(ctx,
			store.FinishParams{Now: t0.Add(time.Second), Outcomes: []store.Outcome{{ID: j.ID, Attempt: j.Attempt, Claim: j.Claims, State: job.StateCompleted}}},
			store.ClaimParams{Now: t0.Add(time.Second), Limit: 5, Worker: "w", LeaseUntil: t0.Add(time.Minute), Queues: []string{"r", "s"}})
		claimed <- result{len(cr.Jobs), err}
		done <- err
	}()
	waitBlockedBy(t, c.PgConn().PID(), done)
	if _, err := tx.Exec(ctx, `SELECT 1 FROM `+s.Schema()+`.queues WHERE name = 's' FOR UPDATE NOWAIT`); err != nil {
		t.Fatalf("while the FinishClaim waits for queue r's row, queue s's row is taken: %v", err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if r := <-claimed; r.err != nil || r.got != 1 {
		t.Fatalf("FinishClaim claimed %d jobs (%v), want the job of r", r.got, r.err)
	}
}

// TestKeyPauseWaitsForClaims: a key's pause (and a hold, through the same
// locked read) takes its queue's row before the key's, as a keyed claim
// does, so it waits for the claims of the queue under way: with the
// queue's row held as a claim holds it, SetKey waits, and ends once the
// row is free. Without it, a pause could commit between a claim's walk
// (the key read running) and the claim's commit, which would start the
// key's job after the pause was acknowledged.
func TestKeyPauseWaitsForClaims(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openStore(t, pgstore.Options{})
	two := 2
	if _, err := s.SetQueue(ctx, store.SetQueueParams{Now: t0, Name: "q", KeyConcurrency: &two}); err != nil {
		t.Fatal(err)
	}
	if err := waitsForRows(t, `SELECT 1 FROM `+s.Schema()+`.queues WHERE name = 'q' FOR UPDATE`, func() error {
		paused := true
		_, err := s.SetKey(ctx, store.SetKeyParams{Now: t0, Queue: "q", Key: "a", Paused: &paused})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	keys, err := s.ListKeys(ctx, "q")
	if err != nil || len(keys) != 1 || !keys[0].Paused {
		t.Fatalf("after the pause: keys %+v (%v), want key a paused", keys, err)
	}
}
