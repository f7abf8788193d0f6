package sqlitestore_test

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/sqlitestore"
)

// appDB opens the file as an application would, next to Hopper, with the
// settings docs/sqlite.md gives: a busy timeout and BEGIN IMMEDIATE.
func appDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_busy_timeout=5000&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec("CREATE TABLE IF NOT EXISTS users (name TEXT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	return db
}

func begin(t *testing.T, db *sql.DB) *sql.Tx {
	t.Helper()
	tx, err := db.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback() })
	return tx
}

func enqueueTx(t *testing.T, s *sqlitestore.Store, tx *sql.Tx, jobs ...*job.Job) []store.EnqueueResult {
	t.Helper()
	res, err := s.EnqueueTx(t.Context(), tx, store.EnqueueParams{Now: t0, Jobs: jobs})
	if err != nil {
		t.Fatalf("EnqueueTx: %v", err)
	}
	if len(res) != len(jobs) {
		t.Fatalf("EnqueueTx of %d jobs: %d results", len(jobs), len(res))
	}
	return res
}

func uniqueJob(t *testing.T, key string) *job.Job {
	t.Helper()
	j := newJob(t, "k")
	j.UniqueKey = key
	return j
}

// TestEnqueueTxCommit: jobs enqueued in an application's transaction are
// invisible until it commits, then exist with the application's own rows.
func TestEnqueueTxCommit(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "hopper.db")
	s := open(t, path, sqlitestore.Options{})
	db := appDB(t, path)

	tx := begin(t, db)
	if _, err := tx.Exec("INSERT INTO users (name) VALUES ('ada')"); err != nil {
		t.Fatal(err)
	}
	res := enqueueTx(t, s, tx, newJob(t, "welcome"), newJob(t, "welcome"))
	if res[0].Duplicate || res[0].State != job.StateAvailable || res[1].ID != res[0].ID+1 {
		t.Fatalf("EnqueueTx: %+v, want two new available jobs with consecutive IDs", res)
	}
	if _, err := s.Get(t.Context(), res[0].ID); !errors.Is(err, job.ErrNotFound) {
		t.Fatalf("Get before the commit: %v, want job.ErrNotFound", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		j, err := s.Get(t.Context(), r.ID)
		if err != nil || j.Kind != "welcome" || j.State != job.StateAvailable || !j.CreatedAt.Equal(t0) {
			t.Errorf("Get(%d) after the commit: %+v, %v", r.ID, j, err)
		}
	}
	// The store's own writes go on, after the application's.
	if ids := enqueue(t, s, newJob(t, "k")); ids[0] != res[1].ID+1 {
		t.Errorf("Enqueue after the commit: ID %d, want %d", ids[0], res[1].ID+1)
	}
	st, err := s.Stats(t.Context(), store.StatsParams{Now: t0})
	if err != nil || st.ByQueue[job.DefaultQueue][job.StateAvailable] != 3 {
		t.Errorf("Stats: %v, %v; want 3 available jobs (the lane counts include the transaction's)", st.ByQueue, err)
	}
}

// TestEnqueueTxRollback: if the application's transaction rolls back, its
// jobs never existed, and their unique keys are free.
func TestEnqueueTxRollback(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "hopper.db")
	s := open(t, path, sqlitestore.Options{})
	db := appDB(t, path)

	tx := begin(t, db)
	res := enqueueTx(t, s, tx, uniqueJob(t, "u"), newJob(t, "k"))
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if _, err := s.Get(t.Context(), r.ID); !errors.Is(err, job.ErrNotFound) {
			t.Errorf("Get(%d) after the rollback: %v, want job.ErrNotFound", r.ID, err)
		}
	}
	if n, err := s.Count(t.Context(), store.ListParams{}); err != nil || n != 0 {
		t.Errorf("Count after the rollback: %d, %v; want 0", n, err)
	}
	again, err := s.Enqueue(t.Context(), store.EnqueueParams{Now: t0, Jobs: []*job.Job{uniqueJob(t, "u")}})
	if err != nil || again[0].Duplicate {
		t.Errorf("Enqueue of the rolled-back unique key: %+v, %v; want a new job", again, err)
	}
}

// TestEnqueueTxUnique: unique keys are checked against committed jobs,
// earlier jobs of the same call and jobs enqueued earlier in the same
// transaction; schedule ticks are checked too.
func TestEnqueueTxUnique(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "hopper.db")
	s := open(t, path, sqlitestore.Options{})
	db := appDB(t, path)
	committed := enqueue(t, s, uniqueJob(t, "a"))[0]

	tx := begin(t, db)
	res := enqueueTx(t, s, tx, uniqueJob(t, "a"), uniqueJob(t, "b"), uniqueJob(t, "b"))
	if !res[0].Duplicate || res[0].ID != committed || res[0].State != job.StateAvailable {
		t.Errorf("key a, held by committed job %d: %+v", committed, res[0])
	}
	if res[1].Duplicate || !res[2].Duplicate || res[2].ID != res[1].ID {
		t.Errorf("key b twice in one call: %+v, %+v; want a new job, then a duplicate of it", res[1], res[2])
	}
	second := enqueueTx(t, s, tx, uniqueJob(t, "b"))
	if !second[0].Duplicate || second[0].ID != res[1].ID {
		t.Errorf("key b in a second call of the transaction: %+v, want a duplicate of job %d", second[0], res[1].ID)
	}

	tick := func() *job.Job {
		j := newJob(t, "k")
		j.Schedule, j.FireTime = "nightly", t0
		return j
	}
	enqueueTx(t, s, tx, tick())
	if _, err := s.EnqueueTx(t.Context(), tx, store.EnqueueParams{Now: t0, Jobs: []*job.Job{tick(), newJob(t, "k")}}); !errors.Is(err, job.ErrDuplicate) {
		t.Errorf("a tick enqueued earlier in the transaction: %v, want job.ErrDuplicate", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Count(t.Context(), store.ListParams{}); err != nil || n != 3 {
		t.Errorf("Count after the commit: %d, %v; want 3 (a, b, the tick)", n, err)
	}
	_, err := s.Enqueue(t.Context(), store.EnqueueParams{Now: t0, Jobs: []*job.Job{tick()}})
	if !errors.Is(err, job.ErrDuplicate) {
		t.Errorf("Enqueue of a tick committed through a transaction: %v, want job.ErrDuplicate", err)
	}
}

// TestEnqueueTxRefused: EnqueueTx takes only a *sql.Tx on the store's own
// file, and only on a writable, open Store.
func TestEnqueueTxRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "hopper.db")
	s := open(t, path, sqlitestore.Options{})
	db := appDB(t, path)
	other := begin(t, appDB(t, filepath.Join(dir, "other.db")))
	mem, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	inMemory := begin(t, mem)

	p := store.EnqueueParams{Now: t0, Jobs: []*job.Job{newJob(t, "k")}}
	for _, c := range []struct {
		name string
		tx   any
		want string
	}{
		{"nil", nil, "nil"},
		{"nil *sql.Tx", (*sql.Tx)(nil), "nil"},
		{"*sql.DB", db, "*sql.DB"},
		{"another file", other, "other.db"},
		{"in-memory database", inMemory, "in-memory"},
	} {
		_, err := s.EnqueueTx(t.Context(), c.tx, p)
		var fe *job.FieldError
		if !errors.As(err, &fe) || fe.Field != "tx" || !strings.Contains(fe.Reason, c.want) {
			t.Errorf("%s: %v, want a *job.FieldError on tx mentioning %q", c.name, err, c.want)
		}
	}
	if n, err := s.Count(t.Context(), store.ListParams{}); err != nil || n != 0 {
		t.Errorf("Count: %d, %v; want 0", n, err)
	}

	// Opened before tx begins: with _txlock=immediate, tx holds the write
	// lock from BEGIN, and a read-write Open waits for it.
	ro := open(t, path, sqlitestore.Options{ReadOnly: true})
	closed := open(t, path, sqlitestore.Options{})
	closed.Close()
	tx := begin(t, db)
	withFunc := newJob(t, "k")
	withFunc.Func = func(context.Context) (any, error) { return nil, nil }
	if _, err := s.EnqueueTx(t.Context(), tx, store.EnqueueParams{Now: t0, Jobs: []*job.Job{withFunc}}); !errors.Is(err, job.ErrNotDurable) {
		t.Errorf("a job with a Func: %v, want job.ErrNotDurable", err)
	}
	if _, err := ro.EnqueueTx(t.Context(), tx, p); !errors.Is(err, sqlitestore.ErrReadOnly) {
		t.Errorf("read-only Store: %v, want ErrReadOnly", err)
	}
	if _, err := closed.EnqueueTx(t.Context(), tx, p); !errors.Is(err, job.ErrClosed) {
		t.Errorf("closed Store: %v, want job.ErrClosed", err)
	}
}

// TestEnqueueTxStaleSnapshot: a deferred transaction that read the file
// before another connection wrote to it cannot write; EnqueueTx says so
// and how to avoid it.
func TestEnqueueTxStaleSnapshot(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "hopper.db")
	s := open(t, path, sqlitestore.Options{})
	appDB(t, path) // creates the users table
	deferred, err := sql.Open("sqlite", "file:"+path+"?_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer deferred.Close()
	tx := begin(t, deferred)
	var n int
	if err := tx.QueryRow("SELECT count(*) FROM users").Scan(&n); err != nil {
		t.Fatal(err)
	}
	enqueue(t, s, newJob(t, "k")) // another connection writes
	_, err = s.EnqueueTx(t.Context(), tx, store.EnqueueParams{Now: t0, Jobs: []*job.Job{newJob(t, "k")}})
	if !errors.Is(err, sqlitestore.ErrLocked) || !strings.Contains(err.Error(), "_txlock=immediate") {
		t.Errorf("EnqueueTx on a stale snapshot: %v, want ErrLocked advising _txlock=immediate", err)
	}
}

// TestEnqueueTxWakes: a job committed through an application's transaction
// wakes the Stores on the file — the one that enqueued it and another (as
// another process would have) — and a started client there runs it.
func TestEnqueueTxWakes(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "hopper.db")
	s := open(t, path, sqlitestore.Options{WatchInterval: 5 * time.Millisecond})
	other := open(t, path, sqlitestore.Options{WatchInterval: 5 * time.Millisecond})
	db := appDB(t, path)

	ws := hopper.NewWorkers()
	hopper.Register(ws, "double", func(ctx context.Context, n int) (any, error) { return 2 * n, nil }, nil)
	quiet := slog.New(slog.DiscardHandler)
	// The application's client only enqueues; the worker's runs the jobs.
	app, err := hopper.NewClient(hopper.Config{Store: s, Workers: ws, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { app.Stop(context.Background()) })
	worker, err := hopper.NewClient(hopper.Config{Store: other, Workers: ws, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := worker.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { worker.Stop(context.Background()) })

	// The Store level: both Stores wake once the transaction commits.
	tx := begin(t, db)
	res := enqueueTx(t, s, tx, newJob(t, "k"))
	for _, st := range []*sqlitestore.Store{s, other} {
		select { // forget earlier wake-ups
		case <-st.Wake():
		default:
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	for i, st := range []*sqlitestore.Store{s, other} {
		select {
		case <-st.Wake():
		case <-time.After(10 * time.Second): // failure guard only
			t.Fatalf("Store %d: no wake-up within 10s of the application's commit", i)
		}
	}
	if j, err := s.Get(t.Context(), res[0].ID); err != nil || j.State != job.StateAvailable {
		t.Fatalf("Get after the wake-up: %+v, %v", j, err)
	}

	// The client level: the worker's client, idle, runs what the
	// application's client enqueued in its transaction.
	tx = begin(t, db)
	if _, err := tx.Exec("INSERT INTO users (name) VALUES ('ada')"); err != nil {
		t.Fatal(err)
	}
	r, err := app.EnqueueTx(t.Context(), tx, "double", 21, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second) // failure guard only
	defer cancel()
	j, err := worker.Wait(ctx, r.ID)
	if err != nil || j.State != hopper.StateCompleted || string(j.Result) != "42" {
		t.Fatalf("Wait: %+v, %v; want completed with result 42", j, err)
	}
}

// TestEnqueueTxDebounce: a debounced job enqueued in the application's
// transaction merges into the job waiting with its key (committed, or
// enqueued earlier in the transaction), and the merge is undone with a
// rollback.
func TestEnqueueTxDebounce(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "hopper.db")
	s := open(t, path, sqlitestore.Options{})
	db := appDB(t, path)
	debounced := func(n string) *job.Job {
		j := &job.Job{Kind: "k", Queue: job.DefaultQueue, MaxAttempts: 3, Args: []byte(`{"n":` + n + `}`), UniqueKey: "d",
			Debounce: job.Debounce{Period: time.Minute}}
		if err := j.Validate(t0); err != nil {
			t.Fatal(err)
		}
		return j
	}
	first := enqueue(t, s, debounced("1"))[0]
	tx := begin(t, db)
	res := enqueueTx(t, s, tx, debounced("2"), debounced("3"))
	for i, r := range res {
		if !r.Debounced || r.ID != first {
			t.Errorf("job %d in the transaction: %+v, want debounced into job %d", i, r, first)
		}
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if j, err := s.Get(t.Context(), first); err != nil || string(j.Args) != `{"n":1}` {
		t.Errorf("after the rollback: %s, %v; want the first args", j.Args, err)
	}
	tx = begin(t, db)
	enqueueTx(t, s, tx, debounced("4"))
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if j, err := s.Get(t.Context(), first); err != nil || string(j.Args) != `{"n":4}` {
		t.Errorf("after the commit: %s, %v; want the transaction's args", j.Args, err)
	}
}
