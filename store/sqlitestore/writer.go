package sqlitestore

import (
	"context"
	"database/sql"
	"runtime"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// Group commit.
//
// Every write goes through one goroutine (writeLoop) that owns the store's
// only write connection. It takes every request queued at that moment (up to
// maxBatch) and runs them in one transaction, BEGIN IMMEDIATE … COMMIT, each
// inside its own SAVEPOINT so that a request that fails rolls back only its
// own changes (the plain Enqueues of a batch are inserted together first,
// see runMerged); the requests' changes to the job counts are written,
// summed, just before COMMIT (counts.go). Callers are answered after COMMIT
// returns, that is after the transaction is durable (fsynced in
// DurabilityFull). While one transaction commits, new requests queue up and
// go together into the next one, so the number of fsyncs per second no
// longer caps the number of operations.

// maxBatch caps the requests of one transaction, bounding how long the write
// lock is held (other processes wait for it) and the latency of the batch.
const maxBatch = 512

// bg is the context statements run under once a request is in a
// transaction: a caller's context can stop a request from starting, never
// interrupt it half-way (the other requests of the batch share the
// transaction).
var bg = context.Background()

// request is one write operation waiting for the writer goroutine.
type request struct {
	ctx  context.Context
	fn   func(w *writer) error
	err  error
	done chan struct{}
	// enq, if set, is a plain Enqueue (no unique key, no schedule: it can
	// fail only with the whole transaction), which runTxn may insert in one
	// statement with the other plain Enqueues of its batch (see runMerged);
	// fn then does not run. noMerge forces fn (a retry after a failure).
	enq     *enqueueReq
	noMerge bool
}

func (r *request) answer(err error) {
	r.err = err
	close(r.done)
}

// writer is the write connection and its prepared statements. Only the
// writer goroutine (and Open, before it starts) uses it.
type writer struct {
	conn    *sql.Conn
	stmts   map[string]*sql.Stmt
	inserts [maxInsertRows + 1]*sql.Stmt // multi-row INSERTs by row count
	// The transaction's changes to lane_counts (see counts.go): those of
	// the requests done, not yet written (pending); those of the running
	// request, not yet written (req); and those of pending that the
	// running request wrote (synced), pending again if it rolls back.
	pending, req, synced countDeltas
	// keyless are the keyed claims' keyless hints (keyless.go).
	keyless keylessHints
}

func newWriter(conn *sql.Conn) *writer {
	return &writer{conn: conn, stmts: make(map[string]*sql.Stmt),
		pending: make(countDeltas), req: make(countDeltas), synced: make(countDeltas)}
}

// stmt returns the prepared statement for q, preparing it on first use.
func (w *writer) stmt(q string) (*sql.Stmt, error) {
	if st := w.stmts[q]; st != nil {
		return st, nil
	}
	st, err := w.conn.PrepareContext(bg, q)
	if err != nil {
		return nil, err
	}
	w.stmts[q] = st
	return st, nil
}

func (w *writer) exec(q string, args ...any) (sql.Result, error) {
	st, err := w.stmt(q)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(bg, args...)
}

// execN runs q and returns the number of rows it changed.
func (w *writer) execN(q string, args ...any) (int64, error) {
	res, err := w.exec(q, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (w *writer) query(q string, args ...any) (*sql.Rows, error) {
	st, err := w.stmt(q)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(bg, args...)
}

// scanRow runs q and scans its first row into dest (sql.ErrNoRows if none).
func (w *writer) scanRow(q string, args []any, dest ...any) error {
	st, err := w.stmt(q)
	if err != nil {
		return err
	}
	return st.QueryRowContext(bg, args...).Scan(dest...)
}

// queryJobs runs q, which selects (or returns) jobCols, and scans all rows.
func (w *writer) queryJobs(q string, args ...any) ([]*job.Job, error) {
	rows, err := w.query(q, args...)
	if err != nil {
		return nil, err
	}
	return scanJobs(rows)
}

func scanJobs(rows *sql.Rows) ([]*job.Job, error) { return appendRows(nil, rows, scanJob) }

// appendRows appends to out every row read with scan, and closes rows
// (as pgx.AppendRows does): given an empty out, no rows is an empty list.
func appendRows[T any](out []*T, rows *sql.Rows, scan func(scanner) (*T, error)) ([]*T, error) {
	defer rows.Close()
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// begin starts a write transaction (BEGIN IMMEDIATE), waiting up to
// timeout while another connection holds the write lock. The write
// connection has no busy handler: begin polls every 50µs–1ms itself, where
// SQLite's handler would sleep 1, 2, 5, … then 100 ms between tries, so
// that it finds the gaps between the transactions of a busy writer in
// another process rather than starving until the timeout.
func (w *writer) begin(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	delay := 50 * time.Microsecond
	for {
		_, err := w.exec("BEGIN IMMEDIATE")
		if err == nil {
			return nil
		}
		if code, ok := driverCode(err); !ok || (code&0xff != codeBusy && code&0xff != codeLocked) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(delay)
		delay = min(2*delay, time.Millisecond)
	}
}

// rollback rolls the transaction back (it may be gone already) and drops
// what the writer kept of it: its changes to the counts, and the keyless
// hints, which may rest on changes it undid (keyless.go).
func (w *writer) rollback() {
	w.exec("ROLLBACK") //nolint:errcheck // may fail: no transaction left
	w.resetCounts()
	w.keyless.dropAll()
}

func (w *writer) close() {
	for _, st := range w.stmts {
		st.Close()
	}
	for _, st := range w.inserts {
		if st != nil {
			st.Close()
		}
	}
	w.conn.Close()
}

// write runs fn in the writer goroutine, inside a transaction shared with
// other requests, and returns once that transaction has committed (fn's
// changes are then durable) or fn's changes have been rolled back (fn or the
// commit failed). ctx can only keep fn from starting.
func (s *Store) write(ctx context.Context, fn func(w *writer) error) error {
	return s.submit(&request{ctx: ctx, fn: fn})
}

// submit queues r and waits for its answer.
func (s *Store) submit(r *request) error {
	if err := s.writable(); err != nil {
		return err
	}
	if err := r.ctx.Err(); err != nil {
		return err
	}
	r.done = make(chan struct{})
	s.qmu.Lock()
	if s.closing {
		s.qmu.Unlock()
		return job.ErrClosed
	}
	s.queue = append(s.queue, r)
	if len(s.queue) == 1 {
		s.qcond.Signal()
	}
	s.qmu.Unlock()
	<-r.done
	return r.err
}

// writeLoop is the writer goroutine. It returns once the store is closing
// and every queued request has been answered.
func (s *Store) writeLoop() {
	defer close(s.writerDone)
	for {
		// Let the callers just answered run and queue their next requests,
		// so that they join the next transaction rather than the one after.
		runtime.Gosched()
		s.qmu.Lock()
		for len(s.queue) == 0 && !s.closing {
			s.qcond.Wait()
		}
		if len(s.queue) == 0 {
			s.qmu.Unlock()
			return
		}
		var batch []*request
		if len(s.queue) <= maxBatch {
			batch, s.queue = s.queue, nil
		} else {
			batch = append([]*request(nil), s.queue[:maxBatch]...)
			s.queue = s.queue[maxBatch:]
		}
		s.qmu.Unlock()
		for len(batch) > 0 {
			batch = s.runTxn(batch)
		}
	}
}

// runTxn runs batch in one transaction and answers its requests. If SQLite
// aborts the whole transaction because of one request (disk full, I/O
// error), that request fails and the others are returned to run again.
func (s *Store) runTxn(batch []*request) (again []*request) {
	w := s.w
	if err := w.begin(s.opts.BusyTimeout); err != nil {
		err = s.translate(err)
		for _, r := range batch {
			r.answer(err)
		}
		return nil
	}
	w.resetCounts()
	ok := make([]*request, 0, len(batch))
	merged, rest, again := s.runMerged(batch)
	if again != nil {
		return again
	}
	ok = append(ok, merged...)
	batch = rest
	// A request alone in its transaction needs no savepoint: if it fails,
	// the transaction is rolled back.
	alone := len(batch) == 1 && len(merged) == 0
	for i, r := range batch {
		if err := r.ctx.Err(); err != nil {
			r.answer(err)
			continue
		}
		var err error
		if !alone {
			_, err = w.exec("SAVEPOINT r")
		}
		if err == nil {
			if err = r.fn(w); err == nil {
				if !alone {
					_, err = w.exec("RELEASE r")
				}
				if err == nil {
					w.endRequest(true)
					ok = append(ok, r)
					continue
				}
			}
			// Undo r alone, if the transaction is still there.
			if !alone {
				if _, rbErr := w.exec("ROLLBACK TO r"); rbErr == nil {
					if _, rbErr = w.exec("RELEASE r"); rbErr == nil {
						w.endRequest(false)
						w.keyless.dropAll()
						r.answer(s.translate(err))
						continue
					}
				}
			}
		}
		// r was alone, or SQLite rolled the transaction back: r fails, the
		// others run again.
		w.rollback()
		r.answer(s.translate(err))
		return append(ok, batch[i+1:]...)
	}
	// The counts of the requests that succeeded, then COMMIT: either
	// failing fails them all.
	err := w.flushCounts()
	if err == nil {
		_, err = w.exec("COMMIT")
	}
	if err != nil {
		w.rollback()
		err = s.translate(err)
		for _, r := range ok {
			r.answer(err)
		}
		return nil
	}
	s.commits.Add(1)
	for _, r := range ok {
		r.answer(nil)
	}
	return nil
}

// runMerged inserts the rows of the plain Enqueues of batch (at least two,
// whose contexts are live) in one multi-row INSERT, as the first statement
// of the transaction, and sets their results. It returns them (to be
// answered after COMMIT) and the batch without them. Plain Enqueues need no
// failure isolation: their INSERT can only fail with the whole statement
// (disk full, I/O error). If it fails, runMerged undoes it (ROLLBACK TO a
// savepoint when other requests follow, else ROLLBACK of the transaction,
// returning the whole batch marked noMerge to run again one by one).
func (s *Store) runMerged(batch []*request) (merged, rest []*request, again []*request) {
	n := 0
	for _, r := range batch {
		if r.enq != nil && !r.noMerge && r.ctx.Err() == nil {
			n++
		}
	}
	if n < 2 {
		return nil, batch, nil
	}
	w := s.w
	merged = make([]*request, 0, n)
	rest = make([]*request, 0, len(batch)-n)
	rows := 0
	for _, r := range batch {
		if r.enq != nil && !r.noMerge && r.ctx.Err() == nil {
			merged = append(merged, r)
			rows += len(r.enq.rows.jobs)
		} else {
			rest = append(rest, r)
		}
	}
	args := make([]any, 0, rows*nInsertCols)
	for _, r := range merged {
		args = append(args, r.enq.rows.args...)
	}
	savepoint := len(rest) > 0
	var err error
	if savepoint {
		_, err = w.exec("SAVEPOINT m")
	}
	var ids []job.ID
	if err == nil {
		ids, err = insertArgs(w, args, rows)
	}
	if err == nil && savepoint {
		_, err = w.exec("RELEASE m")
	}
	if err != nil {
		if savepoint {
			if _, rbErr := w.exec("ROLLBACK TO m"); rbErr == nil {
				if _, rbErr = w.exec("RELEASE m"); rbErr == nil {
					// Run them one by one in this transaction.
					for _, r := range merged {
						r.noMerge = true
					}
					return nil, batch, nil
				}
			}
		}
		w.rollback()
		for _, r := range batch {
			r.noMerge = true
		}
		return nil, nil, batch
	}
	k := 0
	c := counter{d: w.pending} // the first changes of the transaction
	for _, r := range merged {
		e := r.enq
		e.res = make([]store.EnqueueResult, len(e.rows.jobs))
		for i, j := range e.rows.jobs {
			e.res[i] = store.EnqueueResult{ID: ids[k], State: e.rows.states[i]}
			c.job(0, e.rows.states[i], j.Queue, j.Kind)
			if e.rows.states[i] == job.StateAvailable && j.Key == "" {
				w.keylessAvailable(j.Queue)
			}
			k++
		}
	}
	c.flush()
	return merged, rest, nil
}
