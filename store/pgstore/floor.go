package pgstore

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/jackc/pgx/v5/pgtype"
)

// Claim floors. A claim moves jobs out of jobs_claim's partial index, but
// their old entries stay in it, at the front of their queue, until VACUUM
// removes them — and while any transaction older than them is open, VACUUM
// cannot, nor can index scans mark them dead. A claim that starts at the
// front of the queue then checks every one of them against the heap: with
// a transaction held open for 10 minutes at 1,000 jobs/s, 532k entries and
// 455 ms for a claim of 100 (docs/measurements/postgres-log.md, the soak
// runs before the claim floors).
//
// So each Store remembers, per queue, where its last claim found the first
// job it took — the floor — and the next claim starts its index scan there
// ((priority, run_at, id) >= floor, an index condition) instead of at the
// front. Everything below a floor was, at that claim's snapshot, claimed
// or locked by another transaction. A job that becomes available below a
// floor later must lower it, and does:
//
//   - this Store's Enqueue lowers its floors to the lowest key (priority,
//     run-at, ID) it inserted in each queue, before it returns;
//   - every Enqueue's notification carries those keys (payload), and each
//     listening Store lowers its floors when it receives one — at the very
//     moment the notification wakes its workers to claim;
//   - a claim's promotion leaves the lowest key it made available in each
//     queue in a transaction-local setting, and the claim's scan starts at
//     the lower of that and the floor; the keys also lower the floors
//     afterwards (a floor lowered so signals Wake: the claim's limit may
//     have left some) and are sent to the other Stores;
//   - Rescue, Reschedule and a schedule's fire send the keys of the jobs
//     they make available; the other writes that do (RetryDead, a Finish
//     that releases) and a notification without keys (an older Hopper, a
//     trigger) reset the floors: the next claim starts at the fronts;
//   - a claim started before a lowering never raises a floor (an epoch);
//   - a claim never raises a floor above a key announced (by any of the
//     above) while it was in flight, whether or not that key lowered the
//     floor: its snapshot may have missed that job. Without this, a job
//     committed just after a claim's snapshot, below the job the claim
//     then took first but above the floor it started at, was left below
//     the raised floor until the next refresh (issue 19: seconds at the
//     tail under steady single enqueues, and a backlog that grew);
//   - below a floor there may be jobs of kinds its claims did not take, so
//     a claim of other kinds starts at the fronts, and a claim that was to
//     start there and failed leaves the floors reset.
//
// What no write announces — a claim of another process that rolled back,
// a notification lost while the listener reconnected (it resets the floors
// when it is back) — is caught by the refresh: every so often the fronts
// of the queues are read again, at most every PollInterval and at least
// refreshFactor of the last reading's durations apart. While that takes
// under slowFront, a claim does it (starting at the fronts, and with no
// queues given listing the queues with the loose index scans, which read
// the fronts too); past it, a probe beside the claims reads the lowest
// key of each queue (and the queues) and lowers the floors to them, so
// that no claim, nor the start of a job, waits for a slow front. Between
// refreshes a claim with no queues given takes the queues the floors know,
// which every way of making a job available above adds to.
//
// Behind PgBouncer there is no listener, hence no floors: every claim
// starts at the front.
type floors struct {
	mu         sync.Mutex
	known      map[string]floorKey // queue → where its next claim starts
	epoch      uint64              // changed by every lowering and reset
	forced     bool                // reset: the next claim starts at the fronts
	refreshAt  time.Time           // when the fronts are read again
	slow       bool                // the fronts took slowFront or more to read last time
	kinds      string              // the kinds of the claims that set the floors
	probing    bool                // a probe is reading them
	minRefresh time.Duration
	// inflight holds, per claim planned and not yet recorded, the lowest
	// key announced in each queue since its plan (lower).
	inflight map[uint64]map[string]floorKey
	nextID   uint64
}

// slowFront is how long reading the fronts may take within a claim (the
// claim p99 goal with a transaction held open); past it the refresh reads
// them beside the claims, in a probe, so that no claim waits for it.
const slowFront = 20 * time.Millisecond

// refreshFactor spaces the readings of the fronts. Measured in
// BenchmarkSoakOpenTx when claims did them all: at 50, the claims from the
// fronts (up to 718 ms after 10 minutes of an open transaction) delayed
// enough starts to put the enqueue→start p99 at 193 ms; at 200, 17 ms
// overall but 325–524 ms in the intervals that had one (hence the probe).
const refreshFactor = 200

// floorKey is a position in jobs_claim's order within a queue; the zero
// key (set false) is the front. As an announcement of jobs (notifyKeys,
// a notification's payload) it also says whether every one of those jobs
// has a flow-control key (keyed): then no keyless job came with them, and
// the queue's keyless hints (keyless.go) stay. The floors ignore it.
type floorKey struct {
	set      bool
	priority int64
	runAt    int64 // µs since the Unix epoch, as PostgreSQL stores it
	id       int64
	keyed    bool
}

// less reports whether k is before l; the front is before everything.
func (k floorKey) less(l floorKey) bool {
	switch {
	case !l.set:
		return false
	case !k.set:
		return true
	case k.priority != l.priority:
		return k.priority < l.priority
	case k.runAt != l.runAt:
		return k.runAt < l.runAt
	}
	return k.id < l.id
}

// keyOf is the key of j in jobs_claim's order.
func keyOf(j *job.Job) floorKey {
	return floorKey{set: true, priority: int64(j.Priority), runAt: j.RunAt.UnixMicro(), id: int64(j.ID)}
}

func newFloors(minRefresh time.Duration) *floors {
	return &floors{known: make(map[string]floorKey), forced: true, minRefresh: minRefresh,
		inflight: make(map[uint64]map[string]floorKey)}
}

// floorPlan is what a claim needs from the floors.
type floorPlan struct {
	full  bool     // start at the fronts (and list the queues, if none given)
	probe bool     // start a probe (Store.probe) beside the claim
	kinds string   // the claim's kinds, joined
	names []string // with no queues given and not full: the queues known
	epoch uint64
	id    uint64 // the claim's entry in floors.inflight
}

// plan returns the plan of a claim of kinds (joined; "" for any) starting
// now. Below a floor there may be jobs of kinds the claims that set it did
// not take: a claim of other kinds starts at the fronts.
func (f *floors) plan(given bool, kinds string, now time.Time) floorPlan {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextID++
	p := floorPlan{epoch: f.epoch, kinds: kinds, id: f.nextID}
	f.inflight[p.id] = nil
	due := !now.Before(f.refreshAt)
	switch {
	case f.forced || kinds != f.kinds || due && !f.slow:
		p.full, f.forced = true, false
	case due && !f.probing:
		p.probe, f.probing = true, true
	}
	if !given && !p.full {
		p.names = make([]string, 0, len(f.known))
		for q := range f.known {
			p.names = append(p.names, q)
		}
	}
	return p
}

// starts returns, per queue of names, where the claim starts: the floor,
// or the front (the lowest key there is) if full, if there is none, or
// without floors (f nil).
func (f *floors) starts(names []string, full bool) (prio []int64, runAt []pgtype.Timestamptz, id []int64) {
	prio, runAt, id = make([]int64, len(names)), make([]pgtype.Timestamptz, len(names)), make([]int64, len(names))
	if f != nil {
		f.mu.Lock()
		defer f.mu.Unlock()
	}
	for i, q := range names {
		var k floorKey
		if f != nil {
			k = f.known[q]
		}
		if full || !k.set {
			prio[i], runAt[i] = math.MinInt64, pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true}
			continue
		}
		prio[i], runAt[i], id[i] = k.priority, pgtype.Timestamptz{Time: time.UnixMicro(k.runAt), Valid: true}, k.id
	}
	return prio, runAt, id
}

// claimed records a claim made with plan p, which took jobs (in claim
// order), and, if p.full, found the queues listed (nil: queues were
// given) and cut some queue short (capped). A full claim that took took
// sets the next refresh.
func (f *floors) claimed(p floorPlan, jobs []*job.Job, listed []string, capped bool, took time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	announced := f.inflight[p.id] // the lowest keys announced since the plan
	delete(f.inflight, p.id)
	raced := f.epoch != p.epoch // lowered or reset meanwhile: raise nothing
	if p.full && !raced {
		if listed != nil {
			// Queues that have no claimable jobs now drop out; any job
			// made available in one later adds it again.
			keep := make(map[string]floorKey, len(listed))
			for _, q := range listed {
				keep[q] = f.known[q]
			}
			// So do a queue's jobs announced meanwhile, which the
			// listing may have missed.
			for q := range announced {
				keep[q] = f.known[q]
			}
			f.known = keep
		}
		if capped {
			// A queue the claim's limit cut short may have jobs below its
			// floor that the claim did not reach.
			for q := range f.known {
				f.known[q] = floorKey{}
			}
		}
		f.refreshed(took)
		f.kinds = p.kinds
	}
	if p.kinds != f.kinds {
		return // the floors are another kinds' (a full claim raced)
	}
	seen := make(map[string]bool)
	for _, j := range jobs {
		if seen[j.Queue] {
			continue
		}
		seen[j.Queue] = true
		k := keyOf(j)
		if a, ok := announced[j.Queue]; ok && a.less(k) {
			// A job announced meanwhile may have missed the claim's
			// snapshot: the floor stays at or below it.
			k = a
		}
		if cur, ok := f.known[j.Queue]; raced && ok && cur.less(k) {
			continue
		}
		f.known[j.Queue] = k
	}
}

// abandon forgets the claim planned with p, which failed.
func (f *floors) abandon(p floorPlan) {
	f.mu.Lock()
	delete(f.inflight, p.id)
	f.mu.Unlock()
}

// refreshed sets the next refresh after a reading of the fronts that took
// took.
func (f *floors) refreshed(took time.Duration) {
	f.slow = took >= slowFront
	f.refreshAt = time.Now().Add(max(f.minRefresh, refreshFactor*took))
}

// probed records a probe that took took and found keys (the lowest key
// of each queue; lastKey for a queue with none available), or failed. It
// reports whether it lowered a floor.
func (f *floors) probed(keys map[string]floorKey, took time.Duration, err error) bool {
	f.mu.Lock()
	f.probing = false
	if err != nil {
		f.refreshAt = time.Now().Add(f.minRefresh)
		f.mu.Unlock()
		return false
	}
	f.refreshed(took)
	f.mu.Unlock()
	return f.lower(keys)
}

// lower lowers the floor of each queue of keys to its key, if below; a
// queue the floors do not know is added, at its front. It reports whether
// it changed a floor.
func (f *floors) lower(keys map[string]floorKey) bool {
	if f == nil {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for id, a := range f.inflight {
		if a == nil {
			a = make(map[string]floorKey, len(keys))
			f.inflight[id] = a
		}
		mergeKeys(a, keys)
	}
	lowered := false
	for q, k := range keys {
		cur, ok := f.known[q]
		switch {
		case !ok:
			f.known[q] = floorKey{}
		case k.less(cur):
			k.keyed = false
			f.known[q] = k
		default:
			continue
		}
		lowered = true
	}
	if lowered {
		f.epoch++
	}
	return lowered
}

// reset makes the next claim start at the front of every queue.
func (f *floors) reset() {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.forced = true
	f.epoch++
}

// lastKey is after every job: lowering a known floor to it changes nothing,
// but it adds an unknown queue.
var lastKey = floorKey{set: true, priority: math.MaxInt64, runAt: math.MaxInt64, id: math.MaxInt64}

// lowestKeys returns, per queue, the lowest key of the jobs to insert that
// are available now, job i having ID id(i) — or its position in the INSERT,
// for a payload that the statement's sequence completes (sqlNotifyIDs); a
// queue of jobs scheduled for later maps to lastKey (the claim that
// promotes them lowers its floor, but the floors must know the queue).
func lowestKeys(jobs []*job.Job, states []job.State, id func(i int) int64) map[string]floorKey {
	keys := make(map[string]floorKey, 1)
	for i, j := range jobs {
		k := lastKey
		if states[i] == job.StateAvailable {
			k = floorKey{set: true, priority: int64(j.Priority), runAt: j.RunAt.UnixMicro(), id: id(i)}
		}
		k.keyed = j.Key != ""
		keepLower(keys, j.Queue, k)
	}
	return keys
}

// keysOf returns, per queue, the lowest key of the available jobs among
// jobs, whose IDs are known; lastKey for a queue of others.
func keysOf(jobs []*job.Job) map[string]floorKey {
	states := make([]job.State, len(jobs))
	for i, j := range jobs {
		states[i] = j.State
	}
	return lowestKeys(jobs, states, func(i int) int64 { return int64(jobs[i].ID) })
}

// keepLower sets keys[q] to k unless it holds a lower key; keyed only if
// both are.
func keepLower(keys map[string]floorKey, q string, k floorKey) {
	cur, ok := keys[q]
	if !ok {
		keys[q] = k
		return
	}
	keyed := cur.keyed && k.keyed
	if k.less(cur) {
		cur = k
	}
	cur.keyed = keyed
	keys[q] = cur
}

// maxPayload bounds a notification's payload (PostgreSQL refuses 8,000
// bytes and more); keys that do not fit are sent as a reset.
const maxPayload = 7000

// payloadKey is one queue's key in a notification: no P means the front;
// K, that every job announced has a flow-control key (floorKey.keyed: a
// Store of an older Hopper sends none, and its listeners ignore it).
type payloadKey struct {
	Q string `json:"q"`
	P *int64 `json:"p,omitempty"`
	T int64  `json:"t,omitempty"`
	I int64  `json:"i,omitempty"`
	K bool   `json:"k,omitempty"`
}

// encodePayload returns keys as a notification's payload; "" (a reset)
// for nil keys or too many.
func encodePayload(keys map[string]floorKey) string {
	if keys == nil {
		return ""
	}
	list := make([]payloadKey, 0, len(keys))
	for q, k := range keys {
		pk := payloadKey{Q: q, K: k.keyed}
		if k.set {
			pk.P, pk.T, pk.I = &k.priority, k.runAt, k.id
		}
		list = append(list, pk)
	}
	b, err := json.Marshal(list)
	if err != nil || len(b) > maxPayload {
		return ""
	}
	return string(b)
}

// decodePayload returns the keys of a notification's payload, or nil for a
// reset (empty, or not Hopper's). A payload that ends in a line of its own
// gives there the ID of the first row of an INSERT, and its keys the
// positions of theirs (sqlNotifyIDs).
func decodePayload(s string) map[string]floorKey {
	base := int64(0)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		var err error
		if base, err = strconv.ParseInt(s[i+1:], 10, 64); err != nil {
			return nil
		}
		s = s[:i]
	}
	var list []payloadKey
	if s == "" || json.Unmarshal([]byte(s), &list) != nil {
		return nil
	}
	for i := range list {
		if list[i].P != nil && list[i].I != lastKey.id {
			list[i].I += base
		}
	}
	keys := make(map[string]floorKey, len(list))
	for _, pk := range list {
		k := floorKey{}
		if pk.P != nil {
			k = floorKey{set: true, priority: *pk.P, runAt: pk.T, id: pk.I}
		}
		k.keyed = pk.K
		keepLower(keys, pk.Q, k)
	}
	return keys
}

// mergeKeys merges keys into into, keeping the lower key of each queue.
func mergeKeys(into, keys map[string]floorKey) {
	for q, k := range keys {
		keepLower(into, q, k)
	}
}
