package sqlitestore

import (
	"fmt"
	"sync/atomic"

	"github.com/hopperq/hopper/job"
)

// The keyless hint (decision 106). A keyed claim's walk visits the key ""
// (the queue's jobs without a key) whenever it wraps around, which it does
// at every claim once fewer keys than the claim's N can start. That visit
// is sqlKeylessJobs, a read of the queue's claim index filtered by an
// empty flow_key: with no keyless job it reads every available job of the
// queue — a hot key's whole backlog — to return nothing.
//
// So the writer remembers, per keyed queue and kinds of the claim, that
// its last keyless read found no job, and answers the visit empty without
// the read while that holds. It holds exactly, with no expiry: a claim
// runs in the writer's write transaction, which holds the file's write
// lock, so what it reads is the file as it is, and only two things can
// make a job without a key available in the queue after it:
//
//   - a write of this Store. Every statement that makes jobs available
//     says so (keylessAvailable): the inserts of the enqueues
//     (insertRows, runMerged: those of schedules and notifications too),
//     save (Reschedule, RetryDead and RetryMatching, Rescue, a superseded
//     tick), debounceRow, the finishes to 'available' (finish, finishSet)
//     and a claim's promotion of scheduled and retrying jobs (promote,
//     which counts the keyless ones). These are the statements that count
//     jobs into the 'available' rows of lane_counts (counts.go); each
//     clears the hints of its queue only for a job without a key.
//     Available is claimable in SQLite whatever the claim's now (the read
//     has no condition on run_at): time alone changes nothing until a
//     promotion writes;
//   - a commit of another connection: another process, another Store in
//     this one, EnqueueTx's application transaction. PRAGMA data_version
//     on the write connection changes exactly then, and not for the
//     connection's own commits: each hint holds only at the data_version
//     it was set at, read in the same transaction (no other connection
//     can commit while it holds the write lock). A commit of another
//     process that makes no keyless job available drops the hints as
//     well; the next visits read again, once each.
//
// A hint set in a transaction that rolls back (the whole of it, or the
// claim's request to its savepoint) might rest on changes that are undone
// — a keyless job a request claimed before is available again — so every
// rollback drops every hint (dropAll).
//
// Only the writer goroutine uses them: no lock. reads counts the keyless
// reads (tests); with check set, a visit a hint answers reads anyway and
// fails if it finds a job (tests).
type keylessHints struct {
	version int64                      // the write connection's data_version the hints hold at
	none    map[string]map[string]bool // queue → kinds (kindsArg; "": any) whose last read found none
	reads   atomic.Int64
	check   atomic.Bool
}

// holds reports whether a hint says that queue has no available job
// without a key of kinds (kindsArg's text, "" for any): one for those
// kinds, or for any kind.
func (h *keylessHints) holds(queue, kinds string) bool {
	m := h.none[queue]
	return m != nil && (m[kinds] || m[""])
}

// clear drops the hints of queue: a job without a key became available
// there.
func (h *keylessHints) clear(queue string) {
	if len(h.none) > 0 {
		delete(h.none, queue)
	}
}

// dropAll drops every hint: the transaction, or the request, rolled back.
func (h *keylessHints) dropAll() { clear(h.none) }

// at makes the hints those of data_version v: all of them go if another
// connection committed since they were set.
func (h *keylessHints) at(v int64) {
	if v != h.version {
		clear(h.none)
		h.version = v
	}
}

// keylessAvailable implements jobWriter: its statement made a job without
// a key available in queue.
func (w *writer) keylessAvailable(queue string) { w.keyless.clear(queue) }

// keylessJobs returns the first n available jobs without a key of queue,
// of kinds (kindsArg): none, without a read, while a hint holds; else
// those of sqlKeylessJobs, and a read that finds none sets the hint.
func (w *writer) keylessJobs(queue string, kinds any, n int) ([]job.ID, error) {
	h := &w.keyless
	k, _ := kinds.(string)
	var v int64 // the data_version, if read (known)
	known, skip := false, false
	if h.holds(queue, k) {
		var err error
		if v, err = w.dataVersion(); err != nil {
			return nil, err
		}
		known = true
		h.at(v)
		skip = h.holds(queue, k)
	}
	if skip && !h.check.Load() {
		return nil, nil
	}
	if !skip {
		h.reads.Add(1)
	}
	ids, err := w.jobIDs(sqlKeylessJobs, queue, "", kinds, n)
	switch {
	case err != nil:
		return nil, err
	case skip && len(ids) > 0:
		return nil, fmt.Errorf("keyless hint of queue %q: %d available jobs without a key missed", queue, len(ids))
	case skip || len(ids) > 0 || n <= 0:
		return ids, nil
	}
	if !known {
		if v, err = w.dataVersion(); err != nil {
			return nil, err
		}
	}
	h.at(v)
	if h.none == nil {
		h.none = map[string]map[string]bool{}
	}
	m := h.none[queue]
	if m == nil {
		m = map[string]bool{}
		h.none[queue] = m
	}
	m[k] = true
	return nil, nil
}

// dataVersion reads PRAGMA data_version on the write connection: it
// changes when another connection commits to the file.
func (w *writer) dataVersion() (int64, error) {
	var v int64
	err := w.scanRow("PRAGMA data_version", nil, &v)
	return v, err
}
