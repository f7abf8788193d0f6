package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// sqlCountsDiff lists the rows of lane_counts (n != 0) that are not the
// jobs counted by (state, queue, kind), and those counts that are not in
// lane_counts.
const sqlCountsDiff = `WITH j AS (SELECT state, queue, kind, count(*) AS n FROM jobs GROUP BY state, queue, kind),
		c AS (SELECT state, queue, kind, n FROM lane_counts WHERE n != 0)
	SELECT 'lane_counts', * FROM (SELECT * FROM c EXCEPT SELECT * FROM j)
	UNION ALL
	SELECT 'jobs', * FROM (SELECT * FROM j EXCEPT SELECT * FROM c)
	ORDER BY 2, 3, 4, 1`

// countsDiff returns how lane_counts differs from a GROUP BY over the
// jobs, in one snapshot of db; "" if it does not.
func countsDiff(ctx context.Context, db interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}) (string, error) {
	rows, err := db.QueryContext(ctx, sqlCountsDiff)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var from, state, queue, kind string
		var n int64
		if err := rows.Scan(&from, &state, &queue, &kind, &n); err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "\t%s: %s %s %s = %d\n", from, state, queue, kind, n)
	}
	return b.String(), rows.Err()
}

// TestCountsEveryPath runs every operation that writes jobs — in every
// form: merged and single enqueues, EnqueueTx, claims of all lanes, of
// some, capped and merged in Go, promotions, finishes set-based and one by
// one, cancel, reschedule, rescue (expired leases, poison pills, a closed
// Store's jobs), RetryDead, Purge, schedule firing and superseding, and
// requests rolled back in a group-commit batch — and after each compares
// lane_counts with a GROUP BY over the jobs. A path that forgets its
// count update fails it by name (the counts are then recomputed, so that
// each failure is that of its own step).
func TestCountsEveryPath(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "hopper.db")
	s, err := Open(ctx, path, Options{Worker: "w1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	db := rawDB(t, path)
	check := func(step string) {
		t.Helper()
		d, err := countsDiff(ctx, db)
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if d == "" {
			return
		}
		t.Errorf("after %s, lane_counts differs from the jobs:\n%s", step, d)
		if _, err := db.ExecContext(ctx, `DELETE FROM lane_counts;
			INSERT INTO lane_counts SELECT state, queue, kind, count(*) FROM jobs GROUP BY state, queue, kind`); err != nil {
			t.Fatal(err)
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	mk := func(queue, kind string, runAt time.Time, unique string) *job.Job {
		j := &job.Job{Kind: kind, Queue: queue, MaxAttempts: 2, RunAt: runAt, UniqueKey: unique}
		must(j.Validate(t0))
		return j
	}
	enqueue := func(js ...*job.Job) []store.EnqueueResult {
		t.Helper()
		res, err := s.Enqueue(ctx, store.EnqueueParams{Now: t0, Jobs: js})
		must(err)
		return res
	}
	claim := func(p store.ClaimParams) []*job.Job {
		t.Helper()
		if p.Worker == "" {
			p.Worker = "w1"
		}
		if p.LeaseUntil.IsZero() {
			p.LeaseUntil = p.Now.Add(time.Minute)
		}
		res, err := s.Claim(ctx, p)
		must(err)
		return res.Jobs
	}
	outcome := func(j *job.Job, st job.State, runAt time.Time) store.Outcome {
		return store.Outcome{ID: j.ID, Attempt: j.Attempt, Claim: j.Claims, State: st, RunAt: runAt,
			Record: job.Attempt{Attempt: j.Attempt, StartedAt: j.StartedAt, Outcome: st.String()}}
	}
	finish := func(now time.Time, outs ...store.Outcome) []job.State {
		t.Helper()
		reached, err := s.Finish(ctx, store.FinishParams{Now: now, Outcomes: outs})
		must(err)
		return reached
	}
	enqueueReq := func(js ...*job.Job) *request {
		rows, err := makeRows(js)
		must(err)
		r, _ := enqueueRequest(ctx, rows)
		return r
	}
	fnReq := func(fn func(w *writer) error) *request { return &request{ctx: ctx, fn: fn} }
	boom := errors.New("boom")

	// Enqueue: available and scheduled jobs in several lanes, unique keys
	// (one held by an earlier job of the call).
	enqueue(mk("a", "k", t0, ""), mk("a", "k", t0, "u1"), mk("a", "l", t0, "u1"), mk("a", "l", t0, ""),
		mk("b", "k", t0, "u2"), mk("b", "k", at(2), ""), mk("c", "m", at(3), ""), mk("c", "m", t0, ""))
	check("Enqueue")
	enqueue(mk("b", "k", t0, "u2"), mk("a", "k", t0, "u3")) // u2 held: one new job
	check("Enqueue of a held unique key")

	// One batch: plain Enqueues merged into one INSERT, one with a unique
	// key run alone, a request that inserts and fails, a claim that writes
	// the pending counts and then fails (rolled back, counts pending
	// again), and an Enqueue after them.
	claimFail := fnReq(func(w *writer) error {
		filter, err := filterArgs([]string{"a"}, nil)
		must(err)
		if _, err := s.claim(w, store.ClaimParams{Now: t0, Limit: 2, Worker: "w1", LeaseUntil: at(1)}, filter); err != nil {
			return err
		}
		return boom
	})
	insertFail := fnReq(func(w *writer) error {
		rows, err := makeRows([]*job.Job{mk("c", "m", t0, "")})
		must(err)
		if _, err := insertRows(w, rows, nil); err != nil {
			return err
		}
		return boom
	})
	errs := runBatch(s, enqueueReq(mk("a", "k", t0, ""), mk("b", "k", t0, "")), enqueueReq(mk("c", "m", t0, "")),
		enqueueReq(mk("a", "l", t0, "u4")), insertFail, claimFail, enqueueReq(mk("d", "k", t0, "")),
		enqueueReq(mk("a", "l", at(1), "")))
	for i, err := range errs {
		if want := i == 3 || i == 4; want != errors.Is(err, boom) {
			t.Fatalf("batch request %d: %v", i, err)
		}
	}
	check("a batch of merged, single and failing requests")

	// A batch whose transaction SQLite aborts: the others run again.
	errs = runBatch(s, enqueueReq(mk("a", "k", t0, "u5")), fnReq(func(w *writer) error {
		rows, err := makeRows([]*job.Job{mk("c", "m", t0, "")})
		must(err)
		if _, err := insertRows(w, rows, nil); err != nil {
			return err
		}
		if _, err := w.exec("ROLLBACK"); err != nil {
			return err
		}
		return boom
	}), enqueueReq(mk("a", "k", t0, ""), mk("b", "k", t0, "")), enqueueReq(mk("d", "k", t0, "")))
	if errs[0] != nil || !errors.Is(errs[1], boom) || errs[2] != nil || errs[3] != nil {
		t.Fatalf("batch with a lost transaction: %v", errs)
	}
	check("a batch whose transaction was lost")

	// EnqueueTx: committed, rolled back, and failing (a fired tick) in a
	// transaction that commits.
	app, err := sql.Open(driverName(), "file:"+path+"?_busy_timeout=5000&_txlock=immediate")
	must(err)
	t.Cleanup(func() { app.Close() })
	for _, commit := range []bool{true, false} {
		tx, err := app.BeginTx(ctx, nil)
		must(err)
		_, err = s.EnqueueTx(ctx, tx, store.EnqueueParams{Now: t0, Jobs: []*job.Job{mk("a", "k", t0, ""), mk("e", "k", at(5), "")}})
		must(err)
		if commit {
			must(tx.Commit())
		} else {
			must(tx.Rollback())
		}
		check(fmt.Sprintf("EnqueueTx (commit %v)", commit))
	}
	tick := mk("e", "k", t0, "")
	tick.Schedule, tick.FireTime = "s", t0
	enqueue(tick)
	tx, err := app.BeginTx(ctx, nil)
	must(err)
	_, err = s.EnqueueTx(ctx, tx, store.EnqueueParams{Now: t0, Jobs: []*job.Job{mk("e", "k", t0, ""), tick}})
	if !errors.Is(err, job.ErrDuplicate) {
		t.Fatalf("EnqueueTx of a fired tick: %v", err)
	}
	must(tx.Commit())
	check("a failed EnqueueTx")

	// Claims: all lanes; some queues, capped by a queue limit below the
	// limit (several lanes of a); some kinds, promoting a due scheduled
	// job in those lanes; all lanes, promoting; more lanes than one
	// statement merges.
	running := claim(store.ClaimParams{Now: t0, Limit: 3})
	check("Claim of all lanes")
	running = append(running, claim(store.ClaimParams{Now: t0, Limit: 5, Queues: []string{"a", "b"}, QueueLimits: map[string]int{"a": 2}})...)
	check("Claim capped by a queue limit")
	running = append(running, claim(store.ClaimParams{Now: at(2), Limit: 1, Kinds: []string{"k"}, Queues: []string{"b"}})...)
	check("Claim promoting in its lanes")
	running = append(running, claim(store.ClaimParams{Now: at(3), Limit: 2})...)
	check("Claim promoting in all lanes")
	var wide []*job.Job
	for i := range maxClaimArms + 2 {
		wide = append(wide, mk("wide", fmt.Sprint("k", i), t0, ""))
	}
	enqueue(wide...)
	running = append(running, claim(store.ClaimParams{Now: at(3), Limit: maxClaimArms + 1, Queues: []string{"wide"}})...)
	check("Claim of more lanes than one statement merges")
	if len(running) < 15 {
		t.Fatalf("%d jobs claimed, want at least 15", len(running))
	}

	// Heartbeat, and a cancel requested while running.
	_, err = s.Heartbeat(ctx, store.HeartbeatParams{Now: at(3), Worker: "w1", LeaseUntil: at(4),
		Jobs: []store.Lease{{ID: running[0].ID, Claim: 1}, {ID: running[1].ID, Claim: 1}}})
	must(err)
	_, err = s.Cancel(ctx, store.CancelParams{Now: at(3), ID: running[1].ID})
	must(err)
	check("Heartbeat and Cancel of a running job")

	// Finish, set-based: every target state, one with a cancel requested.
	finish(at(3), outcome(running[0], job.StateCompleted, time.Time{}), outcome(running[1], job.StateRetrying, at(4)),
		outcome(running[2], job.StateRetrying, at(4)), outcome(running[3], job.StateDead, time.Time{}),
		outcome(running[4], job.StateCancelled, time.Time{}), outcome(running[5], job.StateAvailable, time.Time{}),
		outcome(running[6], job.StateCompleted, time.Time{}))
	check("Finish")
	// One by one (an ID twice), and an outcome whose lease was lost.
	lost := outcome(running[7], job.StateCompleted, time.Time{})
	lost.Attempt++
	finish(at(3), outcome(running[7], job.StateDead, time.Time{}), outcome(running[7], job.StateCompleted, time.Time{}),
		outcome(running[8], job.StateRetrying, at(4)), lost)
	check("Finish one by one")

	// Cancel and Reschedule of waiting jobs.
	waiting, err := s.List(ctx, store.ListParams{States: []job.State{job.StateAvailable, job.StateScheduled}})
	must(err)
	_, err = s.Cancel(ctx, store.CancelParams{Now: at(3), ID: waiting[0].ID})
	must(err)
	_, err = s.Reschedule(ctx, store.RescheduleParams{Now: at(3), ID: waiting[1].ID, RunAt: at(30)})
	must(err)
	_, err = s.Reschedule(ctx, store.RescheduleParams{Now: at(3), ID: waiting[2].ID, RunAt: at(3)})
	must(err)
	check("Cancel and Reschedule")

	// Rescue: expired leases (a second crash is a poison pill), and the
	// jobs of another Store, which closed.
	s2, err := Open(ctx, path, Options{Worker: "w2"})
	must(err)
	res, err := s2.Claim(ctx, store.ClaimParams{Now: at(4), Limit: 2, Worker: "w2", LeaseUntil: at(60)})
	must(err)
	must(s2.Close())
	if len(res.Jobs) != 2 {
		t.Fatalf("second Store claimed %d jobs, want 2", len(res.Jobs))
	}
	_, err = s.Rescue(ctx, store.RescueParams{Now: at(5), MaxCrashes: 1})
	must(err)
	check("Rescue")

	// Retrying jobs become due: promotion by a claim of all lanes.
	running = claim(store.ClaimParams{Now: at(5), Limit: 100})
	check("Claim promoting retrying jobs")
	var outs []store.Outcome
	for i, j := range running {
		outs = append(outs, outcome(j, []job.State{job.StateDead, job.StateCompleted, job.StateRetrying}[i%3], at(6)))
	}
	finish(at(5), outs...)
	check("Finish of the rest")

	// RetryDead: by ID, then all, but for a dead job whose unique key a
	// new job holds.
	enqueue(mk("z", "k", t0, "uz"))
	c := claim(store.ClaimParams{Now: at(5), Limit: 1, Queues: []string{"z"}})
	finish(at(5), outcome(c[0], job.StateDead, time.Time{}))
	enqueue(mk("z", "k", t0, "uz"))
	dead, err := s.List(ctx, store.ListParams{States: []job.State{job.StateDead}})
	must(err)
	if len(dead) < 3 {
		t.Fatalf("%d dead jobs, want at least 3", len(dead))
	}
	if n, err := s.RetryDead(ctx, store.RetryDeadParams{Now: at(6), IDs: []job.ID{dead[0].ID}}); err != nil || n != 1 {
		t.Fatalf("RetryDead by ID: %d, %v", n, err)
	}
	check("RetryDead by ID")
	_, err = s.RetryDead(ctx, store.RetryDeadParams{Now: at(6), All: true})
	must(err)
	if j, err := s.Get(ctx, c[0].ID); err != nil || j.State != job.StateDead {
		t.Fatalf("dead job whose key is held, after RetryDead: %+v, %v", j, err)
	}
	check("RetryDead of all")

	// Schedules: a tick fires; skipped while its job is available;
	// superseded once it is retrying; a tick whose job exists advances.
	must(s.AddSchedule(ctx, store.AddScheduleParams{Schedule: &job.Schedule{Name: "cron", Spec: "@every 1m",
		Kind: "tick", NextRunAt: at(10), CreatedAt: t0, Options: job.Options{Queue: "cron", MaxAttempts: 3}}}))
	fire := func(fireAt, next int, skip bool) store.FireResult {
		t.Helper()
		j := &job.Job{Kind: "tick", Queue: "cron", MaxAttempts: 3}
		must(j.Validate(at(fireAt)))
		r, err := s.FireSchedule(ctx, store.FireScheduleParams{Now: at(fireAt), Name: "cron", FireTime: at(fireAt),
			Next: at(next), Job: j, SkipIfBusy: skip})
		must(err)
		return r
	}
	if r := fire(10, 11, true); !r.Fired {
		t.Fatalf("first tick: %+v", r)
	}
	check("FireSchedule")
	if r := fire(11, 12, true); !r.Skipped {
		t.Fatalf("tick while the job is available: %+v", r)
	}
	c = claim(store.ClaimParams{Now: at(12), Limit: 1, Queues: []string{"cron"}})
	finish(at(12), outcome(c[0], job.StateRetrying, at(20)))
	if r := fire(12, 13, true); !r.Fired || r.Superseded == 0 {
		t.Fatalf("tick while the job is retrying: %+v", r)
	}
	check("FireSchedule superseding a retrying job")
	_, err = s.UpdateSchedule(ctx, store.UpdateScheduleParams{Name: "cron", SetNext: true, IfNext: at(13), Next: at(12)})
	must(err)
	if r := fire(12, 13, false); r.Fired {
		t.Fatalf("tick whose job exists: %+v", r)
	}
	check("FireSchedule of a fired tick")

	// In one batch, a claim sees the lanes and run-at times of the jobs
	// enqueued before it, in lanes new to lane_counts: with a filter, and
	// of all lanes.
	claimReq := func(p store.ClaimParams, res *store.ClaimResult) *request {
		return fnReq(func(w *writer) error {
			filter, err := filterArgs(p.Queues, p.Kinds)
			if err == nil {
				*res, err = s.claim(w, p, filter)
			}
			return err
		})
	}
	var filtered, all store.ClaimResult
	errs = runBatch(s, enqueueReq(mk("f", "k", at(7), ""), mk("f", "k", at(6), "")),
		claimReq(store.ClaimParams{Now: at(6), Limit: 5, Queues: []string{"f"}, Worker: "w1", LeaseUntil: at(30)}, &filtered),
		enqueueReq(mk("g", "k", at(6), "")),
		claimReq(store.ClaimParams{Now: at(6), Limit: 100, Worker: "w1", LeaseUntil: at(30)}, &all))
	if errs[0] != nil || errs[1] != nil || errs[2] != nil || errs[3] != nil {
		t.Fatalf("batch of enqueues and claims: %v", errs)
	}
	if len(filtered.Jobs) != 1 || filtered.Jobs[0].Queue != "f" || !filtered.NextRunAt.Equal(at(7)) {
		t.Errorf("claim of queue f after its jobs' enqueue in the same batch: %d jobs, next run at %v; want 1, %v",
			len(filtered.Jobs), filtered.NextRunAt, at(7))
	}
	if !slices.ContainsFunc(all.Jobs, func(j *job.Job) bool { return j.Queue == "g" }) {
		t.Errorf("claim of all lanes after the enqueue of queue g in the same batch: %d jobs, none of g", len(all.Jobs))
	}
	check("a batch of enqueues and claims")

	// Purge: by finish time, keeping the newest, by ID, all.
	finished := []job.State{job.StateCompleted, job.StateCancelled, job.StateDead}
	_, err = s.Purge(ctx, store.PurgeParams{States: finished, Before: at(4)})
	must(err)
	check("Purge before a time")
	_, err = s.Purge(ctx, store.PurgeParams{States: finished, KeepNewest: 1})
	must(err)
	check("Purge keeping the newest")
	left, err := s.List(ctx, store.ListParams{States: finished})
	must(err)
	if len(left) > 0 {
		_, err = s.Purge(ctx, store.PurgeParams{States: finished, IDs: []job.ID{left[0].ID}})
		must(err)
	}
	check("Purge by ID")
	_, err = s.Purge(ctx, store.PurgeParams{States: finished, All: true})
	must(err)
	check("Purge of all")

	// What is left, through Stats and Count, and after Close.
	st, err := s.Stats(ctx, store.StatsParams{Now: at(20)})
	must(err)
	total := 0
	for _, byState := range st.ByQueue {
		for _, n := range byState {
			total += n
		}
	}
	if n, err := s.Count(ctx, store.ListParams{}); err != nil || n != total {
		t.Errorf("Count = %d, %v; Stats counts %d", n, err, total)
	}
	must(s.Close())
	check("Close")
}
