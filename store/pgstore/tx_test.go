package pgstore_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/pgstore"
	"github.com/jackc/pgx/v5"
)

// TestEnqueueTxCommit: jobs enqueued in the application's transaction exist
// once it commits, not before, and the commit wakes the listening stores.
func TestEnqueueTxCommit(t *testing.T) {
	t.Parallel()
	schema := freshSchema(t)
	s := openIn(t, schema, pgstore.Options{})
	other := quiet(t, schema)
	ctx := t.Context()
	tx, err := conn(t).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	// The application's own write in the same transaction.
	if _, err := tx.Exec(ctx, `CREATE TEMP TABLE users (name text) ON COMMIT DROP`); err != nil {
		t.Fatal(err)
	}
	res, err := s.EnqueueTx(ctx, tx, store.EnqueueParams{Now: t0, Jobs: []*job.Job{newJob(t, "welcome"), newJob(t, "welcome")}})
	if err != nil || len(res) != 2 || res[0].ID >= res[1].ID {
		t.Fatalf("EnqueueTx: got %v, %v, want two jobs", res, err)
	}
	if _, err := s.Get(ctx, res[0].ID); !errors.Is(err, job.ErrNotFound) {
		t.Errorf("Get before commit: got %v, want job.ErrNotFound", err)
	}
	select {
	case <-other.Wake():
		t.Error("Wake fired before the commit")
	default:
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if j, err := s.Get(ctx, r.ID); err != nil || j.Kind != "welcome" || j.State != job.StateAvailable {
			t.Errorf("Get(%d) after commit: got %+v, %v", r.ID, j, err)
		}
	}
	waitWake(t, other, "commit of EnqueueTx")
}

// TestEnqueueTxRollback: rolled back, the jobs never existed, and a unique
// key they held is free.
func TestEnqueueTxRollback(t *testing.T) {
	t.Parallel()
	s := openStore(t, pgstore.Options{})
	ctx := t.Context()
	tx, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	j := newJob(t, "k")
	j.UniqueKey = "key"
	res, err := s.EnqueueTx(ctx, tx, store.EnqueueParams{Now: t0, Jobs: []*job.Job{j}})
	if err != nil || len(res) != 1 || res[0].Duplicate {
		t.Fatalf("EnqueueTx: got %v, %v", res, err)
	}
	// Inside the transaction, the key is held.
	dup, err := s.EnqueueTx(ctx, tx, store.EnqueueParams{Now: t0, Jobs: []*job.Job{j}})
	if err != nil || !dup[0].Duplicate || dup[0].ID != res[0].ID {
		t.Errorf("second EnqueueTx of the key in the transaction: got %v, %v, want a duplicate of %d", dup, err, res[0].ID)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, res[0].ID); !errors.Is(err, job.ErrNotFound) {
		t.Errorf("Get after rollback: got %v, want job.ErrNotFound", err)
	}
	if n, err := s.Count(ctx, store.ListParams{}); err != nil || n != 0 {
		t.Errorf("Count after rollback: %d, %v", n, err)
	}
	again, err := s.Enqueue(ctx, store.EnqueueParams{Now: t0, Jobs: []*job.Job{j}})
	if err != nil || again[0].Duplicate {
		t.Errorf("Enqueue of the key after rollback: got %v, %v, want a new job", again, err)
	}
}

func TestEnqueueTxWrongType(t *testing.T) {
	t.Parallel()
	s := openStore(t, pgstore.Options{})
	for _, tx := range []any{nil, &sql.Tx{}, "tx"} {
		if _, err := s.EnqueueTx(t.Context(), tx, store.EnqueueParams{Now: t0, Jobs: []*job.Job{newJob(t, "k")}}); err == nil {
			t.Errorf("EnqueueTx(%T): got no error", tx)
		}
	}
	if n, _ := s.Count(t.Context(), store.ListParams{}); n != 0 {
		t.Errorf("after refused EnqueueTx calls: %d jobs", n)
	}
}

// TestEnqueueTxOtherDatabase: a transaction on another database of the same
// server is refused, even when that database has a schema of the store's
// name (the jobs would land there, out of the store's sight), and nothing
// is written in it; a transaction on the store's database from a
// connection of the application's own is taken.
func TestEnqueueTxOtherDatabase(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	schema := freshSchema(t)
	s := openIn(t, schema, pgstore.Options{})

	// A second database on the server, with the store's schema in it.
	var b [6]byte
	rand.Read(b[:])
	name := "hopper_other_" + hex.EncodeToString(b[:])
	admin := conn(t)
	if _, err := admin.Exec(ctx, `CREATE DATABASE `+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), testURL(t))
		if err != nil {
			t.Errorf("drop database %s: %v", name, err)
			return
		}
		defer c.Close(context.Background())
		if _, err := c.Exec(context.Background(), `DROP DATABASE IF EXISTS `+pgx.Identifier{name}.Sanitize()+` WITH (FORCE)`); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	u, err := url.Parse(testURL(t))
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	otherStore, err := pgstore.Open(ctx, u.String(), pgstore.Options{Schema: schema, PoolSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	otherStore.Close() // it only created the schema in the other database
	other, err := pgx.Connect(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(context.Background())

	tx, err := other.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.EnqueueTx(ctx, tx, store.EnqueueParams{Now: t0, Jobs: []*job.Job{newJob(t, "k")}})
	var fe *job.FieldError
	if !errors.As(err, &fe) || fe.Field != "tx" || !strings.Contains(err.Error(), name) {
		t.Fatalf("EnqueueTx in a transaction on database %s: got %v, want a *job.FieldError on tx naming it", name, err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := other.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{schema, "jobs"}.Sanitize()).Scan(&n); err != nil || n != 0 {
		t.Errorf("jobs in the other database's schema: %d, %v; want none", n, err)
	}

	// The store's own database, through a connection of the application's.
	own, err := conn(t).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer own.Rollback(ctx)
	if res, err := s.EnqueueTx(ctx, own, store.EnqueueParams{Now: t0, Jobs: []*job.Job{newJob(t, "k")}}); err != nil || len(res) != 1 {
		t.Fatalf("EnqueueTx on the store's database: %v, %v", res, err)
	}
}

// TestEnqueueTxDebounce: a debounced job enqueued in the application's
// transaction merges into the job waiting with its key, and the merge is
// undone with a rollback.
func TestEnqueueTxDebounce(t *testing.T) {
	t.Parallel()
	s := openIn(t, freshSchema(t), pgstore.Options{})
	ctx := t.Context()
	debounced := func(n string) *job.Job {
		j := &job.Job{Kind: "k", Queue: job.DefaultQueue, MaxAttempts: 3, Args: []byte(`{"n":` + n + `}`), UniqueKey: "d",
			Debounce: job.Debounce{Period: time.Minute}}
		if err := j.Validate(t0); err != nil {
			t.Fatal(err)
		}
		return j
	}
	first := enqueue(t, s, debounced("1"))[0]
	for _, commit := range []bool{false, true} {
		tx, err := conn(t).Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		res, err := s.EnqueueTx(ctx, tx, store.EnqueueParams{Now: t0, Jobs: []*job.Job{debounced("2"), debounced("3")}})
		if err != nil || !res[0].Debounced || !res[1].Debounced || res[1].ID != first {
			t.Fatalf("EnqueueTx: %+v, %v; want both debounced into job %d", res, err, first)
		}
		want := `{"n": 1}`
		if commit {
			err, want = tx.Commit(ctx), `{"n": 3}`
		} else {
			err = tx.Rollback(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
		if j, err := s.Get(ctx, first); err != nil || strings.ReplaceAll(string(j.Args), " ", "") != strings.ReplaceAll(want, " ", "") {
			t.Errorf("commit %v: args %s, %v; want %s", commit, j.Args, err, want)
		}
	}
}
