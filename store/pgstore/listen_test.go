package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/pgstore"
	"github.com/jackc/pgx/v5"
)

// deadline bounds the waits of these tests: they wait on channels and
// notifications, never for a time; a missing signal fails after it.
const deadline = 20 * time.Second

// quiet opens a Store whose Wake fires only on notifications (its poll
// interval is an hour), listening, with nothing pending on Wake.
func quiet(t *testing.T, schema string) *pgstore.Store {
	t.Helper()
	s := openIn(t, schema, pgstore.Options{PollInterval: time.Hour})
	select {
	case <-pgstore.ListenUp(s):
	case <-time.After(deadline):
		t.Fatal("the listener did not LISTEN")
	}
	drain(s)
	return s
}

func drain(s *pgstore.Store) {
	select {
	case <-s.Wake():
	default:
	}
}

func waitWake(t *testing.T, s *pgstore.Store, what string) {
	t.Helper()
	select {
	case <-s.Wake():
	case <-time.After(deadline):
		t.Fatalf("%s: Wake did not fire", what)
	}
}

// TestWakeOnEnqueueByAnotherStore: an Enqueue through one Store wakes
// another Store's Wake channel through LISTEN/NOTIFY.
func TestWakeOnEnqueueByAnotherStore(t *testing.T) {
	t.Parallel()
	schema := freshSchema(t)
	a := openIn(t, schema, pgstore.Options{})
	b := quiet(t, schema)
	enqueue(t, a, newJob(t, "k"))
	waitWake(t, b, "Enqueue through another store")
	// And a job another process made available: a retry from the DLQ.
	res, err := a.Claim(t.Context(), store.ClaimParams{Now: t0, Limit: 1, Worker: "w", LeaseUntil: t0.Add(time.Minute)})
	if err != nil || len(res.Jobs) != 1 {
		t.Fatalf("Claim: %v, %v", res, err)
	}
	if _, err := a.Finish(t.Context(), store.FinishParams{Now: t0, Outcomes: []store.Outcome{{ID: res.Jobs[0].ID, Attempt: 1, Claim: 1, State: job.StateDead}}}); err != nil {
		t.Fatal(err)
	}
	drain(b)
	if n, err := a.RetryDead(t.Context(), store.RetryDeadParams{Now: t0, All: true}); err != nil || n != 1 {
		t.Fatalf("RetryDead: %d, %v", n, err)
	}
	waitWake(t, b, "RetryDead through another store")
}

// listenSide LISTENs on channel on a connection of its own.
func listenSide(t *testing.T, channel string) *pgx.Conn {
	t.Helper()
	c := conn(t)
	if _, err := c.Exec(t.Context(), "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	return c
}

// notificationsUntilMark sends a marker notification on channel from
// another connection and returns the payloads c received before it: all
// the notifications of the transactions committed before the call.
func notificationsUntilMark(t *testing.T, c *pgx.Conn, channel string) []string {
	t.Helper()
	if _, err := conn(t).Exec(t.Context(), `SELECT pg_notify($1, 'mark')`, channel); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), deadline)
	defer cancel()
	var got []string
	for {
		n, err := c.WaitForNotification(ctx)
		if err != nil {
			t.Fatalf("waiting for notifications: %v (got %q)", err, got)
		}
		if n.Payload == "mark" {
			return got
		}
		got = append(got, n.Payload)
	}
}

// TestOneNotifyPerTransaction: an Enqueue of 100 jobs, and a Finish of
// 100 retried jobs, each send one notification, not one per row.
func TestOneNotifyPerTransaction(t *testing.T) {
	t.Parallel()
	s := openStore(t, pgstore.Options{})
	side := listenSide(t, s.Channel())
	sent := make(chan struct{}, 10)
	pgstore.OnNotify(s, func() { sent <- struct{}{} })
	jobs := make([]*job.Job, 100)
	for i := range jobs {
		jobs[i] = newJob(t, "k")
	}
	enqueue(t, s, jobs...)
	<-sent // the notifier sends after the commit
	if got := notificationsUntilMark(t, side, s.Channel()); len(got) != 1 {
		t.Errorf("Enqueue of 100 jobs: %d notifications, want 1", len(got))
	}
	res, err := s.Claim(t.Context(), store.ClaimParams{Now: t0, Limit: 100, Worker: "w", LeaseUntil: t0.Add(time.Minute)})
	if err != nil || len(res.Jobs) != 100 {
		t.Fatalf("Claim: %d jobs, %v", len(res.Jobs), err)
	}
	if got := notificationsUntilMark(t, side, s.Channel()); len(got) != 0 {
		t.Errorf("Claim: %d notifications, want none", len(got))
	}
	outs := make([]store.Outcome, len(res.Jobs))
	for i, j := range res.Jobs {
		outs[i] = store.Outcome{ID: j.ID, Attempt: 1, Claim: j.Claims, State: job.StateRetrying, RunAt: t0.Add(time.Second), Error: "e"}
	}
	if _, err := s.Finish(t.Context(), store.FinishParams{Now: t0, Outcomes: outs}); err != nil {
		t.Fatal(err)
	}
	<-sent
	if got := notificationsUntilMark(t, side, s.Channel()); len(got) != 1 {
		t.Errorf("Finish of 100 retries: %d notifications, want 1", len(got))
	}
}

// TestListenerReconnects: when the listener's connection is killed, the
// store reconnects, LISTENs again and signals Wake.
func TestListenerReconnects(t *testing.T) {
	t.Parallel()
	schema := freshSchema(t)
	s := quiet(t, schema)
	c := conn(t)
	// Terminate the listener's backend: the one LISTENing on the channel.
	var n int
	if err := c.QueryRow(t.Context(), `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE query = $1`, "LISTEN "+pgx.Identifier{s.Channel()}.Sanitize()).Scan(&n); err != nil || n != 1 {
		t.Fatalf("terminate the listener: %d, %v", n, err)
	}
	waitWake(t, s, "after the listener reconnected")
	// It listens again: an enqueue by another store wakes it.
	other := openIn(t, schema, pgstore.Options{})
	ctx, cancel := context.WithTimeout(t.Context(), deadline)
	defer cancel()
	for !s.Listening() {
		// The wake above came from the reconnection itself; wait for the
		// listener to be up again through its own signal.
		select {
		case <-s.Wake():
		case <-ctx.Done():
			t.Fatal("the listener did not come back")
		}
	}
	drain(s)
	enqueue(t, other, newJob(t, "k"))
	waitWake(t, s, "Enqueue after the reconnection")
}

// TestListenerReconnectSignalsCancels: a listener that (re)connects
// signals the cancel watchers too, for a cancel another process sent while
// it was not listening (before, such a cancel waited for the next lease
// renewal, 10 s by default: a flaky 10 s in
// TestCancelReachesAnotherStoreWithin1s when a new Store's listener came up
// after the cancel).
func TestListenerReconnectSignalsCancels(t *testing.T) {
	t.Parallel()
	schema := freshSchema(t)
	s := quiet(t, schema)
	select {
	case <-pgstore.ListenUp(s):
	case <-time.After(deadline):
		t.Fatal("the listener did not come up")
	}
	cancels, stop := s.WatchCancels()
	defer stop()
	c := conn(t)
	var n int
	if err := c.QueryRow(t.Context(), `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE query = $1`, "LISTEN "+pgx.Identifier{s.Channel()}.Sanitize()).Scan(&n); err != nil || n != 1 {
		t.Fatalf("terminate the listener: %d, %v", n, err)
	}
	select {
	case <-cancels:
	case <-time.After(deadline):
		t.Fatal("the cancel watchers were not signalled when the listener reconnected")
	}
}

// TestOwnNotificationsDoNotWake: a Store's listener passes over the
// notifications of its own commits — an Enqueue's caller wakes its own
// workers, and each echo was a second wake-up and, under a steady stream,
// a claim that found nothing (issue 19) — but not another Store's, nor
// those sent in the application's transaction (EnqueueTx), which only the
// echo reports. Notifications reach a listener in commit order, so once
// the other Store's has woken a, a's own came and went before it.
func TestOwnNotificationsDoNotWake(t *testing.T) {
	t.Parallel()
	schema := freshSchema(t)
	a := quiet(t, schema)
	b := openIn(t, schema, pgstore.Options{})
	handled := make(chan struct{}, 10)
	pgstore.OnHeard(a, func() { handled <- struct{}{} })
	enqueue(t, a, newJob(t, "k")) // a's own: passed over
	enqueue(t, b, newJob(t, "k")) // another Store's: wakes a
	for range 2 {
		select {
		case <-handled:
		case <-time.After(deadline):
			t.Fatal("a's listener did not get both notifications")
		}
	}
	waitWake(t, a, "Enqueue through another store")
	if echoes, heard := pgstore.Echoes(a), pgstore.Heard(a); echoes != 1 || heard != 1 {
		t.Errorf("a passed over %d of its own notifications and woke for %d, want 1 and 1 (b's)", echoes, heard)
	}
	// In the application's transaction: the echo wakes a.
	c := conn(t)
	tx, err := c.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.EnqueueTx(t.Context(), tx, store.EnqueueParams{Now: t0, Jobs: []*job.Job{newJob(t, "k")}}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	waitWake(t, a, "commit of EnqueueTx through a")
	// A write whose waking the caller does not do signals a at once: a
	// Finish that retries a job (its new run-at).
	res, err := a.Claim(t.Context(), store.ClaimParams{Now: t0, Limit: 1, Worker: "w", LeaseUntil: t0.Add(time.Minute)})
	if err != nil || len(res.Jobs) != 1 {
		t.Fatalf("Claim: %v, %v", res, err)
	}
	drain(a)
	j := res.Jobs[0]
	if _, err := a.Finish(t.Context(), store.FinishParams{Now: t0, Outcomes: []store.Outcome{{ID: j.ID, Attempt: j.Attempt, Claim: j.Claims,
		State: job.StateRetrying, RunAt: t0.Add(time.Second), Error: "x"}}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.Wake():
	default:
		t.Errorf("a's Wake did not fire when its Finish retried a job")
	}
}

// TestKeySlotWakesAtItsLimit: a Finish that gives back a key's slot wakes
// the Stores (its own Wake at once, the others by its notification) only
// when the key was at its limit — then its jobs may start again — and not
// when it was below: under a steady stream of keyed jobs every Finish
// gave a slot back and sent a notification that woke every process. A
// rescue that ends a key's attempts at its limit wakes them too (it did
// only for a queue's slots or jobs made available again).
func TestKeySlotWakesAtItsLimit(t *testing.T) {
	t.Parallel()
	schema := freshSchema(t)
	s, other := quiet(t, schema), quiet(t, schema)
	two := 2
	if _, err := s.SetQueue(t.Context(), store.SetQueueParams{Now: t0, Name: "q", KeyConcurrency: &two}); err != nil {
		t.Fatal(err)
	}
	enqueue(t, s, keyedJob(t, "a"), keyedJob(t, "a"), keyedJob(t, "a"), keyedJob(t, "a"), keyedJob(t, "a"))
	claim := func(n int) []*job.Job {
		t.Helper()
		res, err := s.Claim(t.Context(), store.ClaimParams{Now: t0, Limit: n, Worker: "w", LeaseUntil: t0.Add(time.Hour),
			Queues: []string{"q"}})
		if err != nil {
			t.Fatal(err)
		}
		drain(s)
		return res.Jobs
	}
	finish := func(j *job.Job) bool {
		t.Helper()
		if _, err := s.Finish(t.Context(), store.FinishParams{Now: t0, Outcomes: []store.Outcome{
			{ID: j.ID, Attempt: j.Attempt, Claim: j.Claims, State: job.StateCompleted}}}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-s.Wake():
			return true
		default:
			return false
		}
	}
	if got := claim(1); len(got) != 1 || finish(got[0]) {
		t.Fatalf("key a ran 1 of 2: its Finish woke the Store (or the claim took %d jobs)", len(got))
	}
	got := claim(5)
	if len(got) != 2 {
		t.Fatalf("claim: %d jobs, want the 2 key a may run", len(got))
	}
	drain(other)
	if !finish(got[0]) {
		t.Error("key a ran 2 of 2: its Finish did not wake the Store")
	}
	waitWake(t, other, "a Finish that gave back the slot of a key at its limit")
	if rest := claim(5); len(rest) != 1 {
		t.Fatalf("claim after the slot came back: %d jobs, want 1", len(rest))
	}
	// A rescue that ends the key's two attempts (dead: a crash each, at
	// most 1) gives back the slots of a key at its limit.
	drain(other)
	dead, err := s.Rescue(t.Context(), store.RescueParams{Now: t0.Add(2 * time.Hour), MaxCrashes: 1})
	if err != nil || len(dead) != 2 || dead[0].State != job.StateDead {
		t.Fatalf("Rescue: %d jobs, %v", len(dead), err)
	}
	select {
	case <-s.Wake():
	default:
		t.Error("a rescue gave back the slots of a key at its limit: it did not wake the Store")
	}
	waitWake(t, other, "a rescue that gave back the slots of a key at its limit")
}
