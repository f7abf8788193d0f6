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

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func openTest(t *testing.T) *Store {
	t.Helper()
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "hopper.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// runBatch runs reqs in one group-commit transaction of s and returns
// their errors.
func runBatch(s *Store, reqs ...*request) []error {
	s.qmu.Lock()
	for _, r := range reqs {
		r.done = make(chan struct{})
		s.queue = append(s.queue, r)
	}
	s.qcond.Signal()
	s.qmu.Unlock()
	errs := make([]error, len(reqs))
	for i, r := range reqs {
		<-r.done
		errs[i] = r.err
	}
	return errs
}

func testJob(t *testing.T, kind string) *job.Job {
	t.Helper()
	j := &job.Job{Kind: kind, Queue: job.DefaultQueue, MaxAttempts: 3}
	if err := j.Validate(t0); err != nil {
		t.Fatal(err)
	}
	return j
}

// submitBatch queues fns as requests while holding the queue's lock, so
// that the writer takes them all in one transaction, and returns their
// errors.
func submitBatch(s *Store, fns ...func(w *writer) error) []error {
	reqs := make([]*request, len(fns))
	for i, fn := range fns {
		reqs[i] = &request{ctx: context.Background(), fn: fn}
	}
	return runBatch(s, reqs...)
}

func insertFn(t *testing.T, kind string, ids *[]job.ID) func(w *writer) error {
	rows, err := makeRows([]*job.Job{testJob(t, kind)})
	if err != nil {
		t.Fatal(err)
	}
	return func(w *writer) error {
		got, err := insertRows(w, rows, nil)
		*ids = got
		return err
	}
}

func kinds(t *testing.T, s *Store) []string {
	t.Helper()
	js, err := s.List(t.Context(), store.ListParams{})
	if err != nil {
		t.Fatal(err)
	}
	var ks []string
	for _, j := range js {
		ks = append(ks, j.Kind)
	}
	return ks
}

// TestGroupCommitIsolatesFailures: in one batch, a failing request rolls
// back only its own changes.
func TestGroupCommitIsolatesFailures(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	var a, b, c []job.ID
	boom := errors.New("boom")
	errs := submitBatch(s,
		insertFn(t, "a", &a),
		func(w *writer) error { // changes something, then fails
			if err := insertFn(t, "b", &b)(w); err != nil {
				return err
			}
			return boom
		},
		insertFn(t, "c", &c),
	)
	if errs[0] != nil || !errors.Is(errs[1], boom) || errs[2] != nil {
		t.Fatalf("errors: %v", errs)
	}
	if got := strings.Join(kinds(t, s), ","); got != "a,c" {
		t.Errorf("stored kinds: %s, want a,c", got)
	}
}

// TestGroupCommitTransactionLost: when SQLite aborts the whole transaction
// under one request, that request fails and the others are run again.
func TestGroupCommitTransactionLost(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	var a, b, c []job.ID
	errs := submitBatch(s,
		insertFn(t, "a", &a),
		func(w *writer) error {
			if err := insertFn(t, "b", &b)(w); err != nil {
				return err
			}
			_, err := w.exec("ROLLBACK") // as SQLite does on some I/O errors
			if err == nil {
				err = errors.New("transaction aborted")
			}
			return err
		},
		insertFn(t, "c", &c),
	)
	if errs[0] != nil || errs[1] == nil || errs[2] != nil {
		t.Fatalf("errors: %v", errs)
	}
	if got := strings.Join(kinds(t, s), ","); got != "a,c" {
		t.Errorf("stored kinds: %s, want a,c", got)
	}
}

// TestDiskFull: a write that cannot grow the file fails with ErrDiskFull;
// what was stored before is intact and the store keeps working.
func TestDiskFull(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	ids := make([]job.ID, 0, 10)
	for i := range 10 {
		res, err := s.Enqueue(t.Context(), store.EnqueueParams{Now: t0, Jobs: []*job.Job{testJob(t, fmt.Sprint("k", i))}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res[0].ID)
	}
	setMax := func(pages string) {
		t.Helper()
		if err := s.write(t.Context(), func(w *writer) error {
			_, err := w.conn.ExecContext(bg, "PRAGMA max_page_count = "+pages)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	setMax("1") // below the current size: no page may be added
	big := testJob(t, "big")
	big.Args = []byte(`"` + strings.Repeat("x", 1<<20) + `"`)
	_, err := s.Enqueue(t.Context(), store.EnqueueParams{Now: t0, Jobs: []*job.Job{big}})
	if !errors.Is(err, ErrDiskFull) || !strings.Contains(err.Error(), s.path) {
		t.Fatalf("Enqueue on a full disk: got %v, want ErrDiskFull naming the file", err)
	}
	for i, id := range ids {
		j, err := s.Get(t.Context(), id)
		if err != nil || j.Kind != fmt.Sprint("k", i) || j.State != job.StateAvailable {
			t.Errorf("job %d after the failed write: %+v, %v", id, j, err)
		}
	}
	if n := len(kinds(t, s)); n != 10 {
		t.Errorf("after the failed write: %d jobs, want 10", n)
	}
	setMax("1073741823")
	if _, err := s.Enqueue(t.Context(), store.EnqueueParams{Now: t0, Jobs: []*job.Job{big}}); err != nil {
		t.Errorf("Enqueue once there is room again: %v", err)
	}
}

func TestTranslateCode(t *testing.T) {
	t.Parallel()
	driverErr := errors.New("driver says no")
	for _, c := range []struct {
		code int
		want error
		text string
	}{
		{5, ErrLocked, "locked by another process"},        // SQLITE_BUSY
		{5 | 2<<8, ErrLocked, "locked by another process"}, // SQLITE_BUSY_SNAPSHOT
		{6, ErrLocked, "locked by another process"},        // SQLITE_LOCKED
		{26, ErrNotDatabase, "not a Hopper/SQLite database"},
		{11, ErrNotDatabase, "corrupted"},
		{13, ErrDiskFull, "disk full"},
		{8, ErrReadOnly, "read-only"},
		{8 | 1<<8, ErrReadOnly, "read-only"}, // SQLITE_READONLY_RECOVERY
		{14, nil, "cannot open"},
		{1, nil, "driver says no"},
	} {
		err := translateCode("/x/hopper.db", c.code, driverErr)
		if c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("code %d: got %v, want %v", c.code, err, c.want)
		}
		if !errors.Is(err, driverErr) || !strings.Contains(err.Error(), "/x/hopper.db") || !strings.Contains(err.Error(), c.text) {
			t.Errorf("code %d: got %q, want it to wrap the driver error, name the file and say %q", c.code, err, c.text)
		}
	}
	if err := translate("p", job.ErrNotFound); err != job.ErrNotFound {
		t.Errorf("translate(job.ErrNotFound) = %v", err)
	}
}

// rawDB opens path with the driver directly.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open(driverName(), "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestForeignDatabaseIsRefused(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "other.db")
	db := rawDB(t, path)
	if _, err := db.Exec("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('hi')"); err != nil {
		t.Fatal(err)
	}
	_, err := Open(t.Context(), path, Options{})
	if !errors.Is(err, ErrNotDatabase) || !strings.Contains(err.Error(), path) {
		t.Fatalf("Open of another application's database: %v", err)
	}
	var n int
	if err := db.QueryRow("SELECT count(*) FROM sqlite_schema").Scan(&n); err != nil || n != 1 {
		t.Errorf("other database after Open: %d objects, %v; want it unchanged", n, err)
	}
}

func TestSchemaTooNew(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "hopper.db")
	s, err := Open(t.Context(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := rawDB(t, path).Exec(fmt.Sprintf("PRAGMA user_version = %d", schemaVersion()+1)); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(t.Context(), path, Options{}); !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("Open of a newer schema: %v, want ErrSchemaTooNew", err)
	}
}

// TestLaneCounts: the trigger-kept counts behind Stats, Count and the
// claim's lanes match the jobs after every kind of transition.
func TestLaneCounts(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	ctx := t.Context()
	var js []*job.Job
	for i := range 40 {
		j := &job.Job{Kind: []string{"k", "l", "m"}[i%3], Queue: []string{"a", "b"}[i%2], MaxAttempts: 1}
		if i%5 == 0 {
			j.RunAt = t0.Add(time.Hour)
		}
		if err := j.Validate(t0); err != nil {
			t.Fatal(err)
		}
		js = append(js, j)
	}
	res, err := s.Enqueue(ctx, store.EnqueueParams{Now: t0, Jobs: js})
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	cl, err := s.Claim(ctx, store.ClaimParams{Now: t0, Limit: 12, Worker: "w", LeaseUntil: t0.Add(time.Second)})
	must(err)
	var outs []store.Outcome
	for i, j := range cl.Jobs[:8] {
		st := []job.State{job.StateCompleted, job.StateRetrying, job.StateDead, job.StateAvailable}[i%4]
		outs = append(outs, store.Outcome{ID: j.ID, Attempt: j.Attempt, Claim: j.Claims, State: st, RunAt: t0.Add(time.Minute)})
	}
	_, err = s.Finish(ctx, store.FinishParams{Now: t0, Outcomes: outs})
	must(err)
	_, err = s.Cancel(ctx, store.CancelParams{Now: t0, ID: res[39].ID})
	must(err)
	_, err = s.Reschedule(ctx, store.RescheduleParams{Now: t0, ID: res[37].ID, RunAt: t0.Add(time.Hour)})
	must(err)
	_, err = s.Rescue(ctx, store.RescueParams{Now: t0.Add(time.Minute)})
	must(err)
	_, err = s.RetryDead(ctx, store.RetryDeadParams{Now: t0, All: true})
	must(err)
	_, err = s.Claim(ctx, store.ClaimParams{Now: t0.Add(2 * time.Hour), Limit: 5, Queues: []string{"b"}, Worker: "w", LeaseUntil: t0.Add(3 * time.Hour)})
	must(err)
	_, err = s.Purge(ctx, store.PurgeParams{States: []job.State{job.StateCompleted, job.StateCancelled}, All: true})
	must(err)

	st, err := s.Stats(ctx, store.StatsParams{Now: t0})
	must(err)
	want := map[string]map[job.State]int{}
	byLane := map[string]int{}
	for _, j := range kindsAll(t, s) {
		if want[j.Queue] == nil {
			want[j.Queue] = map[job.State]int{}
		}
		want[j.Queue][j.State]++
		byLane[fmt.Sprint(j.State, " ", j.Queue, " ", j.Kind)]++
	}
	if fmt.Sprint(st.ByQueue) != fmt.Sprint(want) {
		t.Errorf("Stats.ByQueue = %v, counted %v", st.ByQueue, want)
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT state, queue, kind, n FROM lane_counts WHERE n != 0`)
	must(err)
	got := map[string]int{}
	for rows.Next() {
		var state, q, k string
		var n int
		must(rows.Scan(&state, &q, &k, &n))
		got[state+" "+q+" "+k] = n
	}
	rows.Close()
	if fmt.Sprint(got) != fmt.Sprint(byLane) {
		t.Errorf("lane_counts = %v, counted %v", got, byLane)
	}
	for _, p := range []store.ListParams{
		{}, {Kind: "l"}, {Queue: "a", Kind: "m"}, {States: []job.State{job.StateAvailable, job.StateDead}, Kind: "k"},
	} {
		n, err := s.Count(ctx, p)
		must(err)
		want := 0
		for _, j := range kindsAll(t, s) {
			if (p.Kind == "" || j.Kind == p.Kind) && (p.Queue == "" || j.Queue == p.Queue) &&
				(len(p.States) == 0 || slices.Contains(p.States, j.State)) {
				want++
			}
		}
		if n != want {
			t.Errorf("Count(%+v) = %d, counted %d", p, n, want)
		}
	}
}

// kindsAll returns every job.
func kindsAll(t *testing.T, s *Store) []*job.Job {
	t.Helper()
	js, err := s.List(t.Context(), store.ListParams{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return js
}
