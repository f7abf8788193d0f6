package sqlitestore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hopperq/hopper/backoff"
	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// v1Job is a job as schema version 1 stored it: its columns, with the
// state as a number and the JSON columns in version 1's encoding, and the
// job that must read back from it.
type v1Job struct {
	state    int
	attempts string // JSON, "" for NULL
	retry    string
	want     job.Job
}

// v1Jobs are jobs in every state, written as version 1 wrote them.
func v1Jobs() []v1Job {
	ns := func(t time.Time) time.Time { return t.UTC() }
	started := t0.Add(-time.Minute)
	hist := `[{"attempt":1,"started_at":"2026-03-01T11:59:00Z","duration":1500000000,"worker":"w1","outcome":"retrying","error":"boom","backoff":60000000000}]`
	histWant := []job.Attempt{{Attempt: 1, StartedAt: ns(started), Duration: 1500 * time.Millisecond, Worker: "w1",
		Outcome: "retrying", Error: "boom", Backoff: time.Minute}}
	base := func(id job.ID, st job.State) job.Job {
		return job.Job{ID: id, Kind: "email", Queue: "q1", Args: json.RawMessage(`{"to":"a@b.c"}`), Priority: -2,
			RunAt: t0, MaxAttempts: 5, CreatedAt: t0.Add(-time.Hour), State: st}
	}
	var out []v1Job
	add := func(state int, attempts, retry string, j job.Job) {
		out = append(out, v1Job{state: state, attempts: attempts, retry: retry, want: j})
	}
	j := base(1, job.StateScheduled)
	j.RunAt, j.Timeout, j.UniqueKey = t0.Add(time.Hour), 90*time.Second, "u-1"
	j.Retry = &backoff.Policy{Strategy: backoff.StrategyList, Max: time.Hour, Delays: []time.Duration{time.Second, 30 * time.Second}}
	add(1, "", `{"strategy":"list","max":3600000000000,"delays":[1000000000,30000000000]}`, j)

	j = base(2, job.StateAvailable)
	j.Queue, j.Kind = "q2", "report"
	j.Retry = &backoff.Policy{Strategy: backoff.StrategyExponential, Base: 2 * time.Second, Max: time.Minute, Factor: 1.5, Jitter: backoff.JitterEqual}
	add(2, "", `{"strategy":"exponential","base":2000000000,"max":60000000000,"factor":1.5,"jitter":"equal"}`, j)

	j = base(3, job.StateRunning)
	j.Attempt, j.StartedAt, j.Worker, j.LeaseUntil, j.CancelRequested = 2, t0, "w2", t0.Add(time.Minute), true
	j.Attempts, j.LastError = histWant, "boom"
	add(3, hist, "", j)

	j = base(4, job.StateRetrying)
	j.Attempt, j.StartedAt, j.RunAt, j.Attempts, j.LastError = 1, ns(started), t0.Add(time.Minute), histWant, "boom"
	j.Schedule, j.FireTime = "nightly", t0.Add(-2*time.Hour)
	add(4, hist, "", j)

	j = base(5, job.StateCompleted)
	j.Attempt, j.StartedAt, j.FinishedAt, j.Result = 1, ns(started), t0, json.RawMessage(`{"sent":true}`)
	j.Attempts = []job.Attempt{{Attempt: 1, StartedAt: ns(started), Duration: time.Second, Worker: "w1", Outcome: "completed"}}
	add(5, `[{"attempt":1,"started_at":"2026-03-01T11:59:00Z","duration":1000000000,"worker":"w1","outcome":"completed"}]`, "", j)

	j = base(6, job.StateCancelled)
	j.FinishedAt, j.UniqueKey = t0, "u-1" // finished: the key is free
	add(6, "", "", j)

	j = base(7, job.StateDead)
	j.Attempt, j.StartedAt, j.FinishedAt, j.Crashes, j.LastError = 5, ns(started), t0, 3, "poison pill"
	j.Attempts = []job.Attempt{{Attempt: 5, StartedAt: ns(started), Duration: time.Minute, Worker: "w1", Outcome: "interrupted", Error: "worker lost: lease expired"}}
	add(7, `[{"attempt":5,"started_at":"2026-03-01T11:59:00Z","duration":60000000000,"worker":"w1","outcome":"interrupted","error":"worker lost: lease expired"}]`, "", j)
	return out
}

// writeV1 creates a version 1 file at path: migration 0001 only, the jobs
// of v1Jobs and one schedule, written with raw SQL; job 9, the highest ID
// ever given, was purged.
func writeV1(t *testing.T, path string) {
	t.Helper()
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, path)
	defer db.Close()
	mustExec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.Exec(q, args...); err != nil {
			t.Fatalf("%.60s: %v", q, err)
		}
	}
	mustExec("PRAGMA journal_mode = WAL")
	mustExec(ms[0].SQL)
	mustExec(fmt.Sprintf("PRAGMA application_id = %d", applicationID))
	mustExec("PRAGMA user_version = 1")
	null := func(s string) any {
		if s == "" {
			return nil
		}
		return s
	}
	for _, v := range v1Jobs() {
		j := v.want
		mustExec(`INSERT INTO jobs (id, kind, queue, args, priority, run_at, state, max_attempts, attempt, timeout,
			unique_key, retry, result, last_error, attempts, created_at, started_at, finished_at, worker,
			lease_until, claimed_by, crashes, cancel_requested, schedule, fire_time)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			int64(j.ID), j.Kind, j.Queue, null(string(j.Args)), j.Priority, store.UnixNanos(j.RunAt), v.state,
			j.MaxAttempts, j.Attempt, int64(j.Timeout), null(j.UniqueKey), null(v.retry), null(string(j.Result)),
			j.LastError, null(v.attempts), store.UnixNanos(j.CreatedAt), store.UnixNanos(j.StartedAt),
			store.UnixNanos(j.FinishedAt), null(j.Worker), store.UnixNanos(j.LeaseUntil), null(j.Worker), j.Crashes,
			j.CancelRequested, null(j.Schedule), store.UnixNanos(j.FireTime))
	}
	mustExec(`INSERT INTO jobs (id, kind, queue, run_at, state, max_attempts, created_at) VALUES (9, 'gone', 'q1', 1, 5, 1, 1)`)
	mustExec(`DELETE FROM jobs WHERE id = 9`)
	mustExec(`INSERT INTO schedules (name, spec, overlap, kind, args, queue, max_attempts, timeout, retry,
		next_run_at, last_fire_at, last_job_id, created_at)
		VALUES ('nightly', '@daily', 1, 'report', '{"n":1}', 'q2', 3, 60000000000, '{"strategy":"fixed","base":5000000000,"max":5000000000}', ?, ?, 4, ?)`,
		store.UnixNanos(t0.Add(22*time.Hour)), store.UnixNanos(t0.Add(-2*time.Hour)), store.UnixNanos(t0.Add(-48*time.Hour)))
	mustExec("PRAGMA wal_checkpoint(TRUNCATE)")
}

// TestMigrateV1: a version 1 file is upgraded in place at Open: every job
// and schedule reads back as it was, IDs and the ID sequence are kept, the
// counts are right, and claims and finishes work on the upgraded file.
func TestMigrateV1(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "v1.db")
	writeV1(t, path)
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// A read-only open never migrates: it says what to do and changes nothing.
	if ro, err := Open(t.Context(), path, Options{ReadOnly: true}); !errors.Is(err, ErrSchemaTooOld) ||
		!bytes.Contains([]byte(err.Error()), []byte("hopper migrate")) {
		if ro != nil {
			ro.Close()
		}
		t.Fatalf("read-only Open of a version 1 file: %v, want ErrSchemaTooOld telling to run hopper migrate", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, before) {
		t.Fatal("read-only Open of a version 1 file changed it")
	}

	s, err := Open(t.Context(), path, Options{})
	if err != nil {
		t.Fatalf("Open of a version 1 file: %v", err)
	}
	defer s.Close()
	var version int
	if err := s.rdb.QueryRow("PRAGMA user_version").Scan(&version); err != nil || version != schemaVersion() {
		t.Fatalf("user_version after Open: %d, %v; want %d", version, err, schemaVersion())
	}
	for _, v := range v1Jobs() {
		got, err := s.Get(t.Context(), v.want.ID)
		if err != nil {
			t.Fatalf("Get(%d): %v", v.want.ID, err)
		}
		if g, w := jsonOf(got), jsonOf(&v.want); g != w {
			t.Errorf("job %d after the migration:\n got %s\nwant %s", v.want.ID, g, w)
		}
	}
	sc, err := s.GetSchedule(t.Context(), "nightly")
	if err != nil {
		t.Fatal(err)
	}
	wantSc := job.Schedule{Name: "nightly", Spec: "@daily", Overlap: job.OverlapAllow, Kind: "report", Args: json.RawMessage(`{"n":1}`),
		NextRunAt: t0.Add(22 * time.Hour), LastFireAt: t0.Add(-2 * time.Hour), LastJobID: 4, CreatedAt: t0.Add(-48 * time.Hour), Options: job.Options{Queue: "q2", MaxAttempts: 3, Timeout: time.Minute, Retry: &backoff.Policy{Strategy: backoff.StrategyFixed, Base: 5 * time.Second, Max: 5 * time.Second}}}
	if g, w := jsonOf(sc), jsonOf(&wantSc); g != w {
		t.Errorf("schedule after the migration:\n got %s\nwant %s", g, w)
	}
	st, err := s.Stats(t.Context(), store.StatsParams{Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	wantStats := map[string]map[job.State]int{
		"q1": {job.StateScheduled: 1, job.StateRunning: 1, job.StateRetrying: 1, job.StateCompleted: 1, job.StateCancelled: 1, job.StateDead: 1},
		"q2": {job.StateAvailable: 1},
	}
	if fmt.Sprint(st.ByQueue) != fmt.Sprint(wantStats) {
		t.Errorf("Stats after the migration: %v, want %v", st.ByQueue, wantStats)
	}
	if n, err := s.Count(t.Context(), store.ListParams{Kind: "report"}); err != nil || n != 1 {
		t.Errorf("Count of kind report: %d, %v; want 1", n, err)
	}

	// The upgraded file works: new IDs continue the sequence, the unique
	// key of the scheduled job is held, claims promote and finish.
	res, err := s.Enqueue(t.Context(), store.EnqueueParams{Now: t0, Jobs: []*job.Job{
		{Kind: "email", Queue: "q1", MaxAttempts: 1, RunAt: t0, CreatedAt: t0, State: job.StateAvailable},
		{Kind: "email", Queue: "q1", MaxAttempts: 1, RunAt: t0, CreatedAt: t0, State: job.StateAvailable, UniqueKey: "u-1"},
	}})
	if err != nil || res[0].ID != 10 || !res[1].Duplicate || res[1].ID != 1 {
		t.Fatalf("Enqueue on the upgraded file: %+v, %v; want ID 10 and a duplicate of job 1", res, err)
	}
	cl, err := s.Claim(t.Context(), store.ClaimParams{Now: t0.Add(time.Hour), Limit: 10, Worker: "w", LeaseUntil: t0.Add(2 * time.Hour),
		Kinds: []string{"email"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(idsOf(cl.Jobs)); got != "[4 1 10]" {
		t.Errorf("Claim of kind email: got %s, want [4 1 10] (job 2 is of kind report)", got)
	}
	var outs []store.Outcome
	for _, j := range cl.Jobs {
		outs = append(outs, store.Outcome{ID: j.ID, Attempt: j.Attempt, Claim: j.Claims, State: job.StateCompleted,
			Record: job.Attempt{Attempt: j.Attempt, StartedAt: j.StartedAt, Outcome: "completed"}})
	}
	applied, err := s.Finish(t.Context(), store.FinishParams{Now: t0.Add(time.Hour), Outcomes: outs})
	if err != nil || fmt.Sprint(applied) != "[completed completed completed]" {
		t.Fatalf("Finish: %v, %v", applied, err)
	}
	if j, _ := s.Get(t.Context(), 4); j.State != job.StateCompleted || len(j.Attempts) != 2 || j.Attempts[0].Backoff != time.Minute || j.LastError != "" {
		t.Errorf("job 4 after its second attempt: %+v", j)
	}
	// The running job of a dead worker is rescued; it was cancel-requested.
	moved, err := s.Rescue(t.Context(), store.RescueParams{Now: t0.Add(2 * time.Minute)})
	if err != nil || len(moved) != 1 || moved[0].ID != 3 || moved[0].State != job.StateCancelled {
		t.Errorf("Rescue: %v, %v; want job 3 cancelled", moved, err)
	}
}

func jsonOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func idsOf(js []*job.Job) []job.ID {
	var ids []job.ID
	for _, j := range js {
		ids = append(ids, j.ID)
	}
	return ids
}

// writeV2 creates a version 2 file at path: the version 1 file of writeV1
// upgraded by migration 0002 alone, so that its lane_counts was kept by
// version 2's triggers; then a count is made wrong, as a file's counts
// could drift, and a row left for a lane without jobs.
func writeV2(t *testing.T, path string) {
	t.Helper()
	writeV1(t, path)
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, path)
	defer db.Close()
	for _, q := range []string{
		"BEGIN", ms[1].SQL, "PRAGMA user_version = 2", "COMMIT",
		// As version 2 wrote it: a job enqueued, through the triggers.
		`INSERT INTO jobs (kind, queue, run_at, state, max_attempts, created_at) VALUES ('email', 'q3', 1, 'available', 1, 1)`,
		`UPDATE lane_counts SET n = n + 5 WHERE state = 'running'`,
		`INSERT INTO lane_counts (state, queue, kind, n) VALUES ('dead', 'gone', 'k', 3)`,
		"PRAGMA wal_checkpoint(TRUNCATE)",
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%.60s: %v", q, err)
		}
	}
}

// TestMigrateV2: at Open, a version 2 file (jobs in every state) loses its
// counting triggers and gets lane_counts recomputed from its jobs, wrong
// counts included; its jobs read back unchanged, and every transition
// keeps the counts right on the upgraded file.
func TestMigrateV2(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "v2.db")
	writeV2(t, path)
	s, err := Open(t.Context(), path, Options{Worker: "w"})
	if err != nil {
		t.Fatalf("Open of a version 2 file: %v", err)
	}
	defer s.Close()
	ctx := t.Context()
	var version, triggers int
	if err := s.rdb.QueryRow("PRAGMA user_version").Scan(&version); err != nil || version != schemaVersion() {
		t.Fatalf("user_version after Open: %d, %v; want %d", version, err, schemaVersion())
	}
	// Counts are kept in Go since version 3; the only triggers are
	// version 6's, which keep job_tags for tagged jobs only, version
	// 12's, which give key slots back (jobs with key_slot only), and
	// version 15's, which deletes a deleted job's outputs.
	if err := s.rdb.QueryRow("SELECT count(*) FROM sqlite_schema WHERE type = 'trigger' AND name NOT IN ('job_tags_insert', 'job_tags_delete', 'jobs_key_slot_free', 'jobs_key_slot_gone', 'attempt_outputs_delete')").Scan(&triggers); err != nil || triggers != 0 {
		t.Errorf("triggers after the migration: %d, %v; want none but job_tags', the key slots' and the outputs'", triggers, err)
	}
	checkCounts := func(after string) {
		t.Helper()
		if d, err := countsDiff(ctx, s.rdb); err != nil || d != "" {
			t.Errorf("after %s, lane_counts differs from the jobs (%v):\n%s", after, err, d)
		}
	}
	checkCounts("the migration")
	for _, v := range v1Jobs() {
		got, err := s.Get(ctx, v.want.ID)
		if err != nil {
			t.Fatalf("Get(%d): %v", v.want.ID, err)
		}
		if g, w := jsonOf(got), jsonOf(&v.want); g != w {
			t.Errorf("job %d after the migration:\n got %s\nwant %s", v.want.ID, g, w)
		}
	}
	st, err := s.Stats(ctx, store.StatsParams{Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	wantStats := map[string]map[job.State]int{
		"q1": {job.StateScheduled: 1, job.StateRunning: 1, job.StateRetrying: 1, job.StateCompleted: 1, job.StateCancelled: 1, job.StateDead: 1},
		"q2": {job.StateAvailable: 1},
		"q3": {job.StateAvailable: 1},
	}
	if fmt.Sprint(st.ByQueue) != fmt.Sprint(wantStats) {
		t.Errorf("Stats after the migration: %v, want %v", st.ByQueue, wantStats)
	}
	if n, err := s.Count(ctx, store.ListParams{Kind: "email"}); err != nil || n != 7 {
		t.Errorf("Count of kind email: %d, %v; want 7", n, err)
	}

	// Every transition on the upgraded file keeps the counts: enqueue
	// (a duplicate of the scheduled job's key too), a claim of kind email
	// promoting the due scheduled and retrying jobs, finishes, rescue of
	// the running job (its lease expired), cancel, RetryDead, Purge.
	res, err := s.Enqueue(ctx, store.EnqueueParams{Now: t0, Jobs: []*job.Job{
		{Kind: "email", Queue: "q1", MaxAttempts: 1, RunAt: t0, CreatedAt: t0, State: job.StateAvailable},
		{Kind: "email", Queue: "q1", MaxAttempts: 1, RunAt: t0, CreatedAt: t0, State: job.StateAvailable, UniqueKey: "u-1"},
	}})
	if err != nil || res[0].ID != 11 || !res[1].Duplicate || res[1].ID != 1 {
		t.Fatalf("Enqueue on the upgraded file: %+v, %v; want ID 11 and a duplicate of job 1", res, err)
	}
	checkCounts("Enqueue")
	cl, err := s.Claim(ctx, store.ClaimParams{Now: t0.Add(time.Hour), Limit: 10, Worker: "w", LeaseUntil: t0.Add(2 * time.Hour),
		Kinds: []string{"email"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(idsOf(cl.Jobs)); got != "[4 1 10 11]" {
		t.Errorf("Claim of kind email: got %s, want [4 1 10 11]", got)
	}
	checkCounts("Claim")
	var outs []store.Outcome
	for i, j := range cl.Jobs {
		st := []job.State{job.StateCompleted, job.StateDead, job.StateRetrying, job.StateCancelled}[i]
		outs = append(outs, store.Outcome{ID: j.ID, Attempt: j.Attempt, Claim: j.Claims, State: st, RunAt: t0.Add(3 * time.Hour),
			Record: job.Attempt{Attempt: j.Attempt, StartedAt: j.StartedAt, Outcome: st.String()}})
	}
	if _, err := s.Finish(ctx, store.FinishParams{Now: t0.Add(time.Hour), Outcomes: outs}); err != nil {
		t.Fatal(err)
	}
	checkCounts("Finish")
	if moved, err := s.Rescue(ctx, store.RescueParams{Now: t0.Add(2 * time.Minute)}); err != nil || len(moved) != 1 || moved[0].ID != 3 {
		t.Errorf("Rescue: %v, %v; want job 3", moved, err)
	}
	checkCounts("Rescue")
	if _, err := s.Cancel(ctx, store.CancelParams{Now: t0, ID: 2}); err != nil {
		t.Fatal(err)
	}
	checkCounts("Cancel")
	if n, err := s.RetryDead(ctx, store.RetryDeadParams{Now: t0, All: true}); err != nil || n != 2 {
		t.Errorf("RetryDead: %d, %v; want 2", n, err)
	}
	checkCounts("RetryDead")
	if _, err := s.Purge(ctx, store.PurgeParams{States: []job.State{job.StateCompleted, job.StateCancelled}, All: true}); err != nil {
		t.Fatal(err)
	}
	checkCounts("Purge")
}
