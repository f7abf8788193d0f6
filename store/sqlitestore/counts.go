package sqlitestore

import (
	"cmp"
	"slices"
	"strings"

	"github.com/hopperq/hopper/job"
)

// Job counts.
//
// lane_counts holds the number of jobs of each (state, queue, kind); Stats,
// Count and Claim read it. The store keeps it itself, in the transaction
// that changes the jobs (no trigger does, since migration 0003): every
// statement that inserts or deletes jobs or changes a job's state (none
// changes a job's queue or kind) counts what it did into the running
// request's changes (writer.req, through a counter). The writer sums the
// changes by row of lane_counts and writes the sums with one multi-row
// upsert (addCountsSQL) just before COMMIT, so that a group-commit
// transaction writes a row of lane_counts once, however many jobs and
// requests of its lane it holds. Claim, the one request that reads
// lane_counts in the writer, first writes the changes pending
// (syncCounts): a row may then be written once more.
//
// A request's changes follow its SAVEPOINT: the writer keeps them apart
// until the request succeeds, and a request rolled back takes its changes
// with it, including the earlier requests' changes it wrote to lane_counts
// (they are pending again). EnqueueTx writes its changes in the
// application's transaction, with its rows, under a savepoint of its own.
//
// Rows of lane_counts are never deleted: a lane whose jobs all moved on
// keeps a row with n = 0, as it did when triggers kept the counts.
//
// A statement that makes jobs available (counts them into 'available')
// also tells the keyless hints of their queue when one has no key
// (jobWriter.keylessAvailable, keyless.go).

// laneState is a row of lane_counts.
type laneState struct {
	state       job.State
	queue, kind string
}

// countDeltas are changes to lane_counts: what to add to n, by row.
type countDeltas map[laneState]int64

// move counts n jobs of lane (queue, kind) moved from state from to state
// to; from is 0 for jobs inserted, to is 0 for jobs deleted.
func (d countDeltas) move(from, to job.State, queue, kind string, n int64) {
	if from == to || n == 0 {
		return
	}
	if from != 0 {
		d[laneState{from, queue, kind}] -= n
	}
	if to != 0 {
		d[laneState{to, queue, kind}] += n
	}
}

// addAll adds the changes of e to d.
func (d countDeltas) addAll(e countDeltas) {
	for k, n := range e {
		d[k] += n
	}
}

// counter counts the jobs of one statement into d, summing runs of jobs
// with the same change first, so that a statement moving many jobs of a
// lane costs one map update rather than one per job.
type counter struct {
	d           countDeltas
	from, to    job.State
	queue, kind string
	n           int64
}

// job counts one job of lane (queue, kind) moved from state from to state
// to (as countDeltas.move).
func (c *counter) job(from, to job.State, queue, kind string) {
	if c.n > 0 && (from != c.from || to != c.to || queue != c.queue || kind != c.kind) {
		c.flush()
	}
	c.from, c.to, c.queue, c.kind = from, to, queue, kind
	c.n++
}

// flush adds the run counted so far to d; call it after the last job.
func (c *counter) flush() {
	c.d.move(c.from, c.to, c.queue, c.kind, c.n)
	c.n = 0
}

// maxCountRows caps the rows of one addCountsSQL statement.
const maxCountRows = 32

// addCountsSQL[n] adds to n rows of lane_counts (?1 state, ?2 queue, ?3
// kind, ?4 the number to add, per row), creating those that do not exist.
var addCountsSQL = func() (qs [maxCountRows + 1]string) {
	for n := 1; n <= maxCountRows; n++ {
		qs[n] = `INSERT INTO lane_counts (state, queue, kind, n) VALUES ` +
			strings.Repeat("(?, ?, ?, ?), ", n-1) + `(?, ?, ?, ?)
			ON CONFLICT (state, queue, kind) DO UPDATE SET n = n + excluded.n`
	}
	return qs
}()

// writeCounts applies d to lane_counts through exec, in order of the
// primary key; zero changes are left out.
func writeCounts(exec func(q string, args ...any) error, d countDeltas) error {
	keys := make([]laneState, 0, len(d))
	for k, n := range d {
		if n != 0 {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b laneState) int {
		return cmp.Or(strings.Compare(stateName(a.state), stateName(b.state)),
			strings.Compare(a.queue, b.queue), strings.Compare(a.kind, b.kind))
	})
	args := make([]any, 0, 4*min(len(keys), maxCountRows))
	for start := 0; start < len(keys); start += maxCountRows {
		k := min(len(keys)-start, maxCountRows)
		args = args[:0]
		for _, key := range keys[start : start+k] {
			args = append(args, stateName(key.state), key.queue, key.kind, d[key])
		}
		if err := exec(addCountsSQL[k], args...); err != nil {
			return err
		}
	}
	return nil
}

// endRequest ends the running request's share of the counts: if ok (the
// request's changes stay), its changes join those pending for COMMIT;
// otherwise (it was rolled back to its savepoint) they are dropped, and
// the earlier requests' changes it wrote are pending again.
func (w *writer) endRequest(ok bool) {
	if ok {
		w.pending.addAll(w.req)
	} else {
		w.pending.addAll(w.synced)
	}
	clear(w.req)
	clear(w.synced)
}

// syncCounts writes the pending changes and the running request's to
// lane_counts now, inside the running request, for a request that reads
// lane_counts.
func (w *writer) syncCounts() error {
	if len(w.pending) == 0 && len(w.req) == 0 {
		return nil
	}
	all := make(countDeltas, len(w.pending)+len(w.req))
	all.addAll(w.pending)
	all.addAll(w.req)
	if err := writeCounts(w.execErr, all); err != nil {
		return err
	}
	w.synced.addAll(w.pending)
	clear(w.pending)
	clear(w.req)
	return nil
}

// flushCounts writes the pending changes, before COMMIT.
func (w *writer) flushCounts() error {
	if len(w.pending) == 0 {
		return nil
	}
	if err := writeCounts(w.execErr, w.pending); err != nil {
		return err
	}
	clear(w.pending)
	return nil
}

// resetCounts drops every change: the transaction was rolled back.
func (w *writer) resetCounts() {
	clear(w.pending)
	clear(w.req)
	clear(w.synced)
}

func (w *writer) execErr(q string, args ...any) error {
	_, err := w.exec(q, args...)
	return err
}
