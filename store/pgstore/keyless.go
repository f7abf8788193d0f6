package pgstore

import (
	"strings"
	"sync"
	"time"

	"github.com/hopperq/hopper/job"
)

// The keyless hint (decision 105). A keyed claim's walk visits the key ""
// (the queue's jobs without a key) whenever it wraps around, which it does
// at every claim once fewer keys than the claim's N can start. That visit
// is sqlKeylessJobs, a read of jobs_claim filtered by an empty flow_key:
// with no keyless job it reads every available job of the queue — a hot
// key's whole backlog — to return nothing, and the claims of one keyed
// queue, which take turns on its row, serialize those reads.
//
// So a Store remembers, per keyed queue (and the kinds of the claim), that
// its last keyless read found no job, and answers the visit empty without
// a query while that holds. The hint goes when a job may have become
// available without a key in the queue:
//
//   - this Store wrote one: its enqueues (every path goes through insert,
//     or announce after a commit), the writes that notify (notifyKeys,
//     notify: a reset clears every hint), a claim's promotion (its
//     queues', once the plain claim's batch committed and before the
//     keyed step of the same claim reads: complete);
//   - its listener heard another process's notification naming the
//     queue, or a reset (and its reconnection: notifications may have
//     been missed). A notification whose jobs of the queue all have a
//     key says so (floorKey.keyed, merged with the floor keys: keyed
//     only if every job merged in is) and leaves the hint: under keyed
//     enqueues by other processes the reads used to come back at every
//     notification heard (decision 107). Its own notifications do not: its writes
//     cleared the hints after their commits already — but EnqueueTx's,
//     whose commit is the application's: it clears them when it inserts,
//     and a claim's read between that and the commit sets the hint again
//     until it expires;
//   - otherwise it expires (another process behind PgBouncer, a lost
//     notification): after keylessRecheckMin, or keylessRecheckFactor
//     times the read that found none if that is longer, so that the reads
//     take at most about 1/(1+keylessRecheckFactor) of one backend per
//     keyed queue and Store, however long the backlog.
//
// A read that started before its queue's hint was cleared does not set it
// (a generation per queue with reads in flight, as the floors' epoch): its
// snapshot may predate the job whose write cleared it. Clears come after
// the writes' commits. Clears of other queues (a plain queue's enqueues)
// leave it be.
//
// keylessRecheckMin: a keyless job no notification announces waits at
// most this much longer than it would have (or the factor times the last
// read, past 50 ms a read); 1 s is the poll interval's order, and one
// read a second is cheap next to the claims it spares.
// keylessRecheckFactor: 20, at most ~5% of one backend in these reads.
const (
	keylessRecheckMin    = time.Second
	keylessRecheckFactor = 20
)

// keylessHints are a Store's keyless hints: queue → kinds of the claim
// (kindsKey) → until when a keyless read is skipped, and the reads in
// flight per queue. Only keyed claims set them, and clears delete them:
// at most the keyed queues' entries.
type keylessHints struct {
	mu    sync.Mutex
	until map[string]map[string]time.Time
	reads map[string]*keylessReads
	now   func() time.Time // the hints' clock (tests set it)
}

// keylessReads are the keyless reads of one queue in flight: n of them,
// and a generation that each clear of the queue changes.
type keylessReads struct {
	n   int
	gen uint64
}

func newKeylessHints() *keylessHints {
	return &keylessHints{until: map[string]map[string]time.Time{}, reads: map[string]*keylessReads{}, now: time.Now}
}

// kindsKey is the hints' key of the kinds of a claim (sorted, distinct;
// nil: any).
func kindsKey(kinds []string) string { return strings.Join(kinds, "\x00") }

// skip reports whether a keyless read of queue by a claim of kinds (its
// kindsKey) is known to find no job: a hint for those kinds, or for any
// kind, holds.
func (h *keylessHints) skip(queue, kinds string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	m := h.until[queue]
	if m == nil {
		return false
	}
	now := h.now()
	if u, ok := m[kinds]; ok && now.Before(u) {
		return true
	}
	u, ok := m[""]
	return ok && now.Before(u)
}

// start registers a keyless read of queue about to be sent and returns
// the generation end takes back.
func (h *keylessHints) start(queue string) uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.reads[queue]
	if r == nil {
		r = &keylessReads{}
		h.reads[queue] = r
	}
	r.n++
	return r.gen
}

// end records the end of a keyless read of queue by a claim of kinds,
// started at generation gen, which took took and found jobs, or none
// (empty), or failed: none sets the hint, unless the queue was cleared
// since gen; jobs clear it.
func (h *keylessHints) end(queue, kinds string, gen uint64, took time.Duration, empty, failed bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.reads[queue]
	stale := r.gen != gen
	if r.n--; r.n == 0 {
		delete(h.reads, queue)
	}
	m := h.until[queue]
	switch {
	case failed:
	case !empty:
		if m != nil {
			delete(m, kinds)
			if len(m) == 0 {
				delete(h.until, queue)
			}
		}
	case !stale:
		if m == nil {
			m = map[string]time.Time{}
			h.until[queue] = m
		}
		m[kinds] = h.now().Add(max(keylessRecheckMin, keylessRecheckFactor*took))
	}
}

// drop drops the hints of queue and makes its reads in flight stale; h.mu
// is held.
func (h *keylessHints) drop(queue string) {
	delete(h.until, queue)
	if r := h.reads[queue]; r != nil {
		r.gen++
	}
}

// clearJobs drops the hints of the queues of the jobs without a key among
// jobs.
func (h *keylessHints) clearJobs(jobs []*job.Job) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.until) == 0 && len(h.reads) == 0 { // no keyed claim of this Store looks: every plain enqueue
		return
	}
	for _, j := range jobs {
		if j.Key == "" {
			h.drop(j.Queue)
		}
	}
}

// clearKeys drops the hints of the queues of keys, but of those whose
// jobs all have a flow-control key (floorKey.keyed), every hint if keys is
// nil (a reset: the queues are unknown).
func (h *keylessHints) clearKeys(keys map[string]floorKey) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if keys == nil {
		clear(h.until)
		for _, r := range h.reads {
			r.gen++
		}
		return
	}
	for q, k := range keys {
		if !k.keyed {
			h.drop(q)
		}
	}
}
