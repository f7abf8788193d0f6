package pgstore_test

import (
	"maps"
	"testing"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/pgstore"
)

// TestKeySlotsGivenBackOnce: whatever moves a job out of running gives its
// key's slot back once. A Finish gives the slots back itself, in its
// statement (sqlFreeKeySlots), and clears the jobs' key_slot; a rescue, as
// every other way out, through the trigger jobs_key_slot_free, which since
// migration 21 skips a row whose key_slot the UPDATE cleared. Were both to
// give a Finish's slots back, key a would read 1 slot where 2 of its jobs
// run, and a claim could start a fourth under a limit of 3. A key row left
// with nothing is deleted; one that holds its key is kept, at 0.
func TestKeySlotsGivenBackOnce(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openStore(t, pgstore.Options{})
	c := conn(t)
	three := 3
	if _, err := s.SetQueue(ctx, store.SetQueueParams{Now: t0, Name: "q", KeyConcurrency: &three}); err != nil {
		t.Fatal(err)
	}
	slots := func(step string, want map[string]int) {
		t.Helper()
		rows, err := c.Query(ctx, `SELECT key, running FROM `+s.Schema()+`.queue_keys WHERE queue = 'q'`)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		for rows.Next() {
			var key string
			var n int
			if err := rows.Scan(&key, &n); err != nil {
				t.Fatal(err)
			}
			got[key] = n
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(got, want) {
			t.Fatalf("%s: key rows %v, want %v", step, got, want)
		}
	}
	claim := func(now time.Time, n int) []*job.Job {
		t.Helper()
		res, err := s.Claim(ctx, store.ClaimParams{Now: now, Limit: n, Worker: "w", LeaseUntil: now.Add(time.Minute), Queues: []string{"q"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Jobs) != n {
			t.Fatalf("claim at %v: %d jobs, want %d", now, len(res.Jobs), n)
		}
		return res.Jobs
	}
	finish := func(js ...*job.Job) {
		t.Helper()
		p := store.FinishParams{Now: t0}
		for _, j := range js {
			p.Outcomes = append(p.Outcomes, store.Outcome{ID: j.ID, Attempt: j.Attempt, Claim: j.Claims, State: job.StateCompleted})
		}
		if _, err := s.Finish(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	byKey := func(js []*job.Job) map[string][]*job.Job {
		m := map[string][]*job.Job{}
		for _, j := range js {
			m[j.Key] = append(m[j.Key], j)
		}
		return m
	}

	enqueue(t, s, keyedJob(t, "a"), keyedJob(t, "a"), keyedJob(t, "a"), keyedJob(t, "b"))
	run := byKey(claim(t0, 4))
	slots("claimed 3 of a, 1 of b", map[string]int{"a": 3, "b": 1})
	finish(run["a"][0])
	slots("one of a finished", map[string]int{"a": 2, "b": 1})
	finish(run["b"][0])
	slots("b's job finished", map[string]int{"a": 2})
	hold := t0.Add(time.Hour)
	if _, err := s.SetKey(ctx, store.SetKeyParams{Now: t0, Queue: "q", Key: "a", HoldUntil: &hold}); err != nil {
		t.Fatal(err)
	}
	finish(run["a"][1:]...)
	slots("a's last two finished in one call, a held", map[string]int{"a": 0})
	var zero time.Time
	if _, err := s.SetKey(ctx, store.SetKeyParams{Now: t0, Queue: "q", Key: "a", HoldUntil: &zero}); err != nil {
		t.Fatal(err)
	}
	slots("a released", map[string]int{})

	// A rescue: through the trigger.
	enqueue(t, s, keyedJob(t, "a"), keyedJob(t, "a"))
	claim(t0, 2)
	slots("claimed 2 of a", map[string]int{"a": 2})
	if _, err := s.Rescue(ctx, store.RescueParams{Now: t0.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	slots("a's two rescued", map[string]int{})
	again := claim(t0.Add(time.Hour), 2)
	slots("a's two claimed again", map[string]int{"a": 2})
	finish(again[0])
	slots("one of them finished", map[string]int{"a": 1})
}

// TestFinishKeySlotsBesideAClaim: a Finish gives back its key's slot from
// the key row as it is once the Finish holds it, not as the Finish's
// snapshot saw it. Key a runs one job; a claim of the key (a transaction
// that adds a slot to its row) commits while the Finish of that job waits
// for the row. The Finish's snapshot saw 1 slot (so it would delete the row)
// and the row now holds 2: it must leave 1. Decided on the snapshot's
// values, the row would keep 2 slots for the one job running — a slot
// lost for good.
func TestFinishKeySlotsBesideAClaim(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openStore(t, pgstore.Options{})
	three := 3
	if _, err := s.SetQueue(ctx, store.SetQueueParams{Now: t0, Name: "q", KeyConcurrency: &three}); err != nil {
		t.Fatal(err)
	}
	enqueue(t, s, keyedJob(t, "a"))
	res, err := s.Claim(ctx, store.ClaimParams{Now: t0, Limit: 1, Worker: "w", LeaseUntil: t0.Add(time.Minute), Queues: []string{"q"}})
	if err != nil || len(res.Jobs) != 1 {
		t.Fatalf("Claim: %d jobs, %v", len(res.Jobs), err)
	}
	j := res.Jobs[0]
	claimed := `UPDATE ` + s.Schema() + `.queue_keys SET running = running + 1 WHERE queue = 'q' AND key = 'a'`
	err = waitsForRows(t, claimed, func() error {
		_, err := s.Finish(ctx, store.FinishParams{Now: t0, Outcomes: []store.Outcome{
			{ID: j.ID, Attempt: j.Attempt, Claim: j.Claims, State: job.StateCompleted}}})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var running int
	if err := conn(t).QueryRow(ctx, `SELECT coalesce((SELECT running FROM `+s.Schema()+`.queue_keys WHERE queue = 'q' AND key = 'a'), -1)`).Scan(&running); err != nil {
		t.Fatal(err)
	}
	if running != 1 {
		t.Errorf("key a after the Finish of its job beside a claim of another: %d slots (-1: no row), want 1", running)
	}
}
