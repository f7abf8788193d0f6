package pgstore

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/jackc/pgx/v5"
)

// Group commit of plain enqueues.
//
// A single-job Enqueue costs a round trip and a commit (a WAL flush, and
// NOTIFY's global lock at commit). The group writer is one goroutine that
// sends the plain Enqueues (no unique key, no schedule) of every caller:
// when one arrives while nothing is in flight it goes at once; those that
// arrive while a batch is in flight wait and then go together, as one
// multi-row INSERT and one NOTIFY in one round trip. The more callers, the
// more jobs per commit: 8 goroutines enqueueing one job at a time share
// statements instead of being capped at one commit per job.
//
// Merging keeps each caller's all-or-nothing: a plain INSERT can fail only
// as a whole statement (a broken connection, a full disk), and then each
// caller's jobs are sent again on their own, so that only a caller whose
// own jobs fail gets an error.

// maxGroupJobs caps the jobs of one merged INSERT.
const maxGroupJobs = 2000

// groupSenders is the number of merged INSERTs that may be in flight at
// once, each on its own connection: while one waits for its commit's WAL
// flush, the next batch is already on its way, and PostgreSQL flushes the
// commits that meet in one fsync.
const groupSenders = 1

// groupWriter queues plain enqueues for its senders.
type groupWriter struct {
	s     *Store
	queue chan struct{} // signalled (buffered, 1) when reqs grows
	stop  chan struct{} // closed by close
	reqs  reqQueue
	wg    sync.WaitGroup // the senders
	// hold, if set (tests), is received from before each batch is taken,
	// so that a test can queue several requests first; queued, if set, is
	// called after each request is queued.
	hold   atomic.Pointer[chan struct{}]
	queued func()
}

// enqReq is one Enqueue call waiting for the writer.
type enqReq struct {
	ctx  context.Context
	rows *newRows
	res  []store.EnqueueResult
	err  error
	done chan struct{}
}

func newGroupWriter(s *Store) *groupWriter {
	return &groupWriter{s: s, queue: make(chan struct{}, 1), stop: make(chan struct{})}
}

// start starts the senders.
func (w *groupWriter) start() {
	w.wg.Add(groupSenders)
	for range groupSenders {
		go w.loop()
	}
}

// submit queues rows and waits for the commit. ctx can keep the request
// from being sent, never interrupt it once sent: its rows share the
// statement with other callers' (nothing half-done is possible either way).
func (w *groupWriter) submit(ctx context.Context, rows *newRows) ([]store.EnqueueResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r := &enqReq{ctx: ctx, rows: rows, done: make(chan struct{})}
	if !w.reqs.push(r) {
		return nil, job.ErrClosed
	}
	if w.queued != nil {
		w.queued()
	}
	select {
	case w.queue <- struct{}{}:
	default:
	}
	<-r.done
	return r.res, r.err
}

// close stops accepting requests; the senders answer those queued and
// return.
func (w *groupWriter) close() {
	w.reqs.close()
	close(w.stop)
	w.wg.Wait()
}

// loop is a sender: it takes every request queued (up to maxGroupJobs
// jobs), sends them as one INSERT, answers them, and again.
func (w *groupWriter) loop() {
	defer w.wg.Done()
	for {
		if h := w.hold.Load(); h != nil {
			<-*h
		}
		batch, closed := w.reqs.take(maxGroupJobs)
		if len(batch) == 0 {
			if closed {
				return
			}
			select {
			case <-w.queue:
			case <-w.stop:
			}
			continue
		}
		w.send(batch)
		// Let the callers just answered run and queue their next
		// requests, so that they join the next batch.
		runtime.Gosched()
	}
}

// send inserts the rows of batch in one statement and answers each.
func (w *groupWriter) send(batch []*enqReq) {
	live := batch[:0]
	n := 0
	for _, r := range batch {
		if err := r.ctx.Err(); err != nil {
			r.err = err
			close(r.done)
			continue
		}
		live = append(live, r)
		n += len(r.rows.jobs)
	}
	if len(live) == 0 {
		return
	}
	s := w.s
	merged := live[0].rows
	if len(live) > 1 {
		merged = &newRows{plain: true, jobs: make([]*job.Job, 0, n), states: make([]job.State, 0, n)}
		merged.arrays.grow(n)
		for _, r := range live {
			merged.jobs = append(merged.jobs, r.rows.jobs...)
			merged.states = append(merged.states, r.rows.states...)
			merged.arrays.appendRows(&r.rows.arrays, nil)
		}
	}
	res, err := s.insert(context.Background(), poolSender{s}, merged, notifyAfterCommit)
	if err != nil && len(live) > 1 {
		// Someone's rows, or the connection, failed the statement: each
		// caller on its own.
		for _, r := range live {
			r.res, r.err = s.insert(context.Background(), poolSender{s}, r.rows, notifyAfterCommit)
			r.err = s.translate(r.err)
			close(r.done)
		}
		return
	}
	err = s.translate(err)
	k := 0
	for _, r := range live {
		if err != nil {
			r.err = err
		} else {
			r.res = res[k : k+len(r.rows.jobs) : k+len(r.rows.jobs)]
			k += len(r.rows.jobs)
		}
		close(r.done)
	}
}

// reqQueue is the writer's queue of requests.
type reqQueue struct {
	mu     sync.Mutex
	reqs   []*enqReq
	closed bool
}

// push queues r, unless the queue is closed.
func (q *reqQueue) push(r *enqReq) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return false
	}
	q.reqs = append(q.reqs, r)
	return true
}

// take removes the first requests, at least one if any, up to maxJobs jobs
// in all, and reports whether the queue is closed.
func (q *reqQueue) take(maxJobs int) ([]*enqReq, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	n, jobs := 0, 0
	for n < len(q.reqs) && (n == 0 || jobs+len(q.reqs[n].rows.jobs) <= maxJobs) {
		jobs += len(q.reqs[n].rows.jobs)
		n++
	}
	batch := append([]*enqReq(nil), q.reqs[:n]...)
	q.reqs = append(q.reqs[:0], q.reqs[n:]...)
	return batch, q.closed
}

func (q *reqQueue) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
}

// Statically, a poolSender is a batchSender.
var _ batchSender = poolSender{}

// Compile-time check that pgx.Tx is a batchSender (EnqueueTx).
var _ batchSender = pgx.Tx(nil)
