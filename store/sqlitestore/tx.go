package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"os"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

var _ store.TxEnqueuer = (*Store)(nil)

// Transactional enqueue. EnqueueTx runs Enqueue's statements (the unique-key
// and fire-tick lookups, the multi-row INSERT, the upsert of lane_counts)
// in a *sql.Tx of the application's own on the store's file, not through
// the writer goroutine, inside a savepoint of its own: the jobs and their
// counts are part of that transaction and exist if and only if it commits,
// and a call that fails leaves nothing of its jobs in it.
// Workers learn of them as of any other process's commit, through the
// data_version watcher (Wake).

// appTx runs the statements of EnqueueTx in the application's transaction.
type appTx struct {
	ctx    context.Context
	tx     *sql.Tx
	deltas countDeltas // the changes to lane_counts, written by enqueue
}

func (a appTx) exec(q string, args ...any) error {
	_, err := a.tx.ExecContext(a.ctx, q, args...)
	return err
}

func (a appTx) counts() countDeltas { return a.deltas }

// keylessAvailable implements jobWriter: nothing to do, the application's
// commit is another connection's to the writer, which drops its hints
// (keyless.go).
func (a appTx) keylessAvailable(string) {}

func (a appTx) update(q string, args ...any) error { return a.exec(q, args...) }

func (a appTx) scanRow(q string, args []any, dest ...any) error {
	return a.tx.QueryRowContext(a.ctx, q, args...).Scan(dest...)
}

func (a appTx) insertN(n int, args []any) (sql.Result, error) {
	return a.tx.ExecContext(a.ctx, insertSQL[n], args...)
}

// EnqueueTx implements store.TxEnqueuer: it is Enqueue inside tx, which must
// be a *sql.Tx of the application's own on this store's file (opened with
// the same driver, modernc.org/sqlite, registered as "sqlite"), so that the
// jobs exist if and only if tx commits. It validates and checks the jobs as
// Enqueue does (job.ErrNotDurable, *job.FieldError, job.ErrDuplicate for a
// schedule tick that exists; a unique key held by a waiting or running job,
// committed or inserted earlier in tx, makes a Duplicate result). A tx of
// another type, or on another database, is a *job.FieldError on "tx".
//
// Workers of this and other processes see the jobs once tx commits (Wake
// signals it); if tx rolls back, nothing of them remains. SQLite has one
// writer at a time: from its first write until it ends, tx holds the file's
// write lock and every write of every Store on the file waits for it (up to
// Options.BusyTimeout, then ErrLocked). Keep such transactions short, and
// make no other write through the store (Enqueue, …) while one is open on
// the same goroutine: it would wait for the lock that goroutine holds.
// docs/sqlite.md gives the connection settings the application needs.
func (s *Store) EnqueueTx(ctx context.Context, tx any, p store.EnqueueParams) ([]store.EnqueueResult, error) {
	t, ok := tx.(*sql.Tx)
	switch {
	case tx == nil:
		return nil, job.Invalid("tx", "is nil: give the *sql.Tx to enqueue in")
	case !ok:
		return nil, job.Invalid("tx", "is a %T: the SQLite store enqueues in a *sql.Tx on %s", tx, s.path)
	case t == nil:
		return nil, job.Invalid("tx", "is a nil *sql.Tx")
	}
	if err := s.writable(); err != nil {
		return nil, err
	}
	rows, err := makeRows(p.Jobs)
	if err != nil {
		return nil, err
	}
	a := appTx{ctx: ctx, tx: t, deltas: make(countDeltas)}
	if err := s.checkTx(a); err != nil {
		return nil, err
	}
	res, err := a.enqueue(rows)
	if err != nil {
		if code, ok := driverCode(err); ok && code == codeBusySnapshot {
			return nil, fmt.Errorf("sqlitestore: %s: %w: the transaction read the file before another connection wrote to it, "+
				"so it may not write now: roll it back and run it again, and begin such transactions with BEGIN IMMEDIATE "+
				"(DSN parameter _txlock=immediate): %w", s.path, ErrLocked, err)
		}
		return nil, s.translate(err)
	}
	return res, nil
}

// enqueue runs enqueueRows and writes its counts under a savepoint: if it
// fails, nothing of it remains in the transaction.
func (a appTx) enqueue(rows *newRows) ([]store.EnqueueResult, error) {
	if err := a.exec("SAVEPOINT hopper_enqueue"); err != nil {
		return nil, err
	}
	res, err := enqueueRows(a, rows)
	if err == nil {
		err = writeCounts(a.exec, a.deltas)
	}
	if err == nil {
		err = a.exec("RELEASE hopper_enqueue")
	}
	if err != nil {
		// Even if ctx is done: the transaction stays the application's.
		undo := appTx{ctx: context.WithoutCancel(a.ctx), tx: a.tx}
		if undo.exec("ROLLBACK TO hopper_enqueue") == nil {
			undo.exec("RELEASE hopper_enqueue") //nolint:errcheck // err is the error to report
		}
		return nil, err
	}
	return res, nil
}

// codeBusySnapshot is SQLITE_BUSY_SNAPSHOT: a deferred transaction that
// read an older snapshot of a WAL file tried to write.
const codeBusySnapshot = codeBusy | 2<<8

// checkTx fails unless a's transaction is on the store's file: jobs
// inserted into another database would never run.
func (s *Store) checkTx(a appTx) error {
	var file string
	if err := a.scanRow(`SELECT file FROM pragma_database_list WHERE name = 'main'`, nil, &file); err != nil {
		if a.ctx.Err() != nil {
			return a.ctx.Err()
		}
		return job.Invalid("tx", "is not a transaction on a SQLite database (%v): the SQLite store enqueues in a *sql.Tx on %s", err, s.path)
	}
	if file == "" {
		return job.Invalid("tx", "is on an in-memory or temporary database, not on %s", s.path)
	}
	theirs, err := os.Stat(file)
	if err != nil {
		return fmt.Errorf("sqlitestore: %s: enqueue in a transaction: %w", s.path, err)
	}
	ours, err := os.Stat(s.path)
	if err != nil {
		return fmt.Errorf("sqlitestore: %s: %w", s.path, err)
	}
	if !os.SameFile(theirs, ours) {
		return job.Invalid("tx", "is on %s, not on the store's file %s", file, s.path)
	}
	return nil
}
