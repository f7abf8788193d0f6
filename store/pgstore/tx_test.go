package pgstore_test

import (
	"database/sql"
	"errors"
	"testing"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/pgstore"
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
