package memstore

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

var (
	_ store.KeyControl    = (*Store)(nil)
	_ store.KeyGetter     = (*Store)(nil)
	_ store.KeyJobCounter = (*Store)(nil)
)

// qkey names one key of one queue.
type qkey struct{ queue, key string }

// A keyed queue (store.KeyControl) keeps the available jobs of each lane
// that have a key in one heap per key (lane.byKey), the keys with jobs in
// lane.keyList, sorted; the jobs without a key stay in lane.ready and count
// as the key "". A claim walks the keys in turn from the queue's cursor,
// skipping blocked keys at the cost of a map lookup each: a key's backlog
// is never read through.

// keyOf returns the entry's flow-control key.
func (e *entry) keyOf() string { return e.opt().key }

// keyHeap returns the heap an available entry of a keyed lane waits in.
func (l *lane) keyHeap(key string, create bool) *jobHeap {
	if key == "" {
		return &l.ready
	}
	h := l.byKey[key]
	if h == nil && create {
		if l.byKey == nil {
			l.byKey = make(map[string]*jobHeap)
		}
		h = &jobHeap{}
		l.byKey[key] = h
		i, _ := slices.BinarySearch(l.keyList, key)
		l.keyList = slices.Insert(l.keyList, i, key)
	}
	return h
}

// dropKeyIfEmpty forgets key's heap in l once it is empty.
func (l *lane) dropKeyIfEmpty(key string) {
	if key == "" {
		return
	}
	if h := l.byKey[key]; h != nil && h.len() == 0 {
		delete(l.byKey, key)
		if i, ok := slices.BinarySearch(l.keyList, key); ok {
			// Shift the shorter side: the keys are served in order, so
			// the one emptied is mostly near the front, and a backlog of
			// 100,000 keys each emptied in turn would move the whole list
			// each time.
			if i < len(l.keyList)/2 {
				copy(l.keyList[1:i+1], l.keyList[:i])
				l.keyList[0] = ""
				l.keyList = l.keyList[1:]
			} else {
				l.keyList = slices.Delete(l.keyList, i, i+1)
			}
		}
	}
}

// rekey makes the lanes of queue keyed or not, as its state asks: keyed
// while it has a limit per key or a paused or held key. Lanes that change
// move their available entries between the heaps.
func (s *Store) rekey(queue string) {
	want := s.keyedQueue(queue)
	for _, l := range s.llist {
		if l.queue != queue || l.keyed == want {
			continue
		}
		var moved []*entry
		for l.ready.len() > 0 {
			moved = append(moved, l.ready.pop())
		}
		for _, h := range l.byKey {
			for h.len() > 0 {
				moved = append(moved, h.pop())
			}
		}
		l.byKey, l.keyList, l.keyed = nil, nil, want
		for _, e := range moved {
			s.enqueueHeap(e)
		}
	}
}

// keyedQueue reports whether queue is keyed: it has a limit or a rate per
// key, or a paused or held key.
func (s *Store) keyedQueue(queue string) bool {
	if q := s.queues[queue]; q.KeyConcurrency > 0 || !q.KeyRate.Zero() {
		return true
	}
	for k, st := range s.keys {
		if k.queue == queue && (st.Paused || !st.HeldUntil.IsZero()) {
			return true
		}
	}
	return false
}

// keyState returns the state of key of queue (the zero state, named, if
// it has no row).
func (s *Store) keyState(queue, key string) store.KeyState {
	if k := s.keys[qkey{queue, key}]; k != nil {
		return *k
	}
	return store.KeyState{Queue: queue, Key: key}
}

// putKey stores k, or deletes its row if it is idle at now.
func (s *Store) putKey(k store.KeyState, now time.Time) {
	q := qkey{k.Queue, k.Key}
	if k.Idle(now) {
		delete(s.keys, q)
		return
	}
	if s.keys == nil {
		s.keys = make(map[qkey]*store.KeyState)
	}
	s.keys[q] = &k
}

// releaseKeySlot gives back the key slot of e's attempt, which is leaving
// running; the key's row goes once it has nothing left to keep.
func (s *Store) releaseKeySlot(e *entry) {
	if !e.keySlot {
		return
	}
	e.keySlot = false
	k := s.keys[qkey{e.l.queue, e.keyOf()}]
	if k == nil {
		return
	}
	k.Running--
	if k.Running <= 0 && !k.Paused && k.HeldUntil.IsZero() {
		delete(s.keys, qkey{e.l.queue, e.keyOf()})
	}
}

// takeKeySlot makes e's new attempt hold a slot of its key, if its queue
// limits keys.
func (s *Store) takeKeySlot(e *entry, now time.Time) {
	key := e.keyOf()
	if key == "" || s.queues[e.l.queue].KeyConcurrency == 0 {
		return
	}
	k := s.keyState(e.l.queue, key)
	k.Running++
	k.UpdatedAt = now
	s.putKey(k, now)
	e.keySlot = true
}

// keyCandidate is the next job a keyed lane gives a claim: the first
// job of its first key, in turn from cursor, that may start at now — or,
// under a KeyRate with Drop, that its throttle alone blocks and that is
// to be dropped (drop) — while the key's running jobs and the claim's
// drops of it (for its key's rate or its queue's) stay below its limit
// (store.QueueControl). blocked reports whether a key with jobs was at
// its limit; until is the earliest time a throttled key with jobs allows
// a start (0 if none was throttled and held).
func (s *Store) keyCandidate(l *lane, cursor string, now time.Time) (h *jobHeap, key string, drop, blocked bool, until int64) {
	q := s.queues[l.queue]
	ok := func(key string) bool {
		drop = false
		var k store.KeyState
		if row := s.keys[qkey{l.queue, key}]; row != nil {
			if row.Idle(now) { // a passed hold: collected
				delete(s.keys, qkey{l.queue, key})
			} else {
				k = *row
			}
		}
		if q.KeyConcurrency > 0 && len(s.keyDrops) > 0 && key != "" && k.Running < q.KeyConcurrency &&
			k.Running+s.keyDrops[qkey{l.queue, key}] >= q.KeyConcurrency {
			return false // its free slots went to the claim's drops
		}
		if q.KeyRate.Zero() && k.Key == "" {
			return true // no row, no throttle
		}
		k.Key = key
		if !q.KeyRate.Zero() {
			k.Throttle = s.keyThrottle(l.queue, key, q.KeyRate)
		}
		switch store.KeyBlocked(k, q.KeyConcurrency, now) {
		case "":
			return true
		case "limit":
			blocked = true
		case "throttled":
			if q.KeyRate.Drop {
				drop = true
				return true
			}
			if next := k.Throttle.Next(); until == 0 || next < until {
				until = next
			}
		}
		return false
	}
	// The keys after cursor, then "" (the jobs without a key), then the
	// keys up to the cursor: store.NextKey's order.
	start, found := slices.BinarySearch(l.keyList, cursor)
	if found {
		start++
	}
	for _, k := range l.keyList[start:] {
		if ok(k) {
			return l.byKey[k], k, drop, blocked, until
		}
	}
	if l.ready.len() > 0 {
		return &l.ready, "", false, blocked, until
	}
	for _, k := range l.keyList[:start] {
		if ok(k) {
			return l.byKey[k], k, drop, blocked, until
		}
	}
	return nil, "", false, blocked, until
}

// dropKeyed drops e, a job of key popped from its heap by a claim at now
// because its key's throttle (a KeyRate with Drop) allows no start
// (forKey: store.KeyDropReason) or its queue's own rate allows no more
// (store.RateSplit: store.DropReason), and adds it to res.Dropped
// (store.ApplyDrop).
func (s *Store) dropKeyed(e *entry, key string, forKey bool, now time.Time, res *store.ClaimResult) error {
	q := s.queues[e.l.queue]
	reason := store.DropReason(q.Name, q.Rate)
	if forKey {
		reason = store.KeyDropReason(q.Name, key, q.KeyRate)
	}
	var v job.Job
	e.view(&v)
	if err := store.ApplyDrop(&v, now, reason); err != nil {
		return err // an available job can always be cancelled
	}
	s.update(e, &v)
	if s.keyDrops == nil {
		s.keyDrops = make(map[qkey]int)
	}
	s.keyDrops[qkey{e.l.queue, key}]++
	j := new(job.Job)
	e.fill(j)
	res.Dropped = append(res.Dropped, j)
	return nil
}

// keyDropsIn counts the jobs of queue the latest claim dropped in its
// walk of the keys.
func (s *Store) keyDropsIn(queue string) int {
	n := 0
	for k, d := range s.keyDrops {
		if k.queue == queue {
			n += d
		}
	}
	return n
}

// keyBefore reports whether key a comes before key b in the turn order
// from cursor.
func keyBefore(a, b, cursor string) bool {
	wa, wb := a <= cursor, b <= cursor // wrapped around
	if wa != wb {
		return wb
	}
	return a < b
}

// SetKey implements store.KeyControl.
func (s *Store) SetKey(ctx context.Context, p store.SetKeyParams) (store.KeyState, error) {
	if err := p.Validate(); err != nil {
		return store.KeyState{}, err
	}
	if err := s.lock(); err != nil {
		return store.KeyState{}, err
	}
	defer s.mu.Unlock()
	k := store.ApplySetKey(s.keyState(p.Queue, p.Key), p)
	s.putKey(k, p.Now)
	s.rekey(p.Queue)
	return k, nil
}

// holdKey applies an outcome's HoldKeyUntil to e's key.
func (s *Store) holdKey(e *entry, until, now time.Time) {
	key := e.keyOf()
	if until.IsZero() || key == "" {
		return
	}
	s.putKey(store.ApplySetKey(s.keyState(e.l.queue, key), store.SetKeyParams{
		Now: now, Queue: e.l.queue, Key: key, HoldUntil: &until}), now)
	s.rekey(e.l.queue)
}

// GetKey implements store.KeyGetter.
func (s *Store) GetKey(ctx context.Context, queue, key string) (store.KeyState, error) {
	if err := s.lock(); err != nil {
		return store.KeyState{}, err
	}
	defer s.mu.Unlock()
	k := s.keyState(queue, key)
	if ks := s.keyTATs[queue]; ks != nil && ks.by[key] != nil {
		k.Throttle = s.keyThrottle(queue, key, s.queues[queue].KeyRate)
	}
	return k, nil
}

// KeysWithJobs implements store.KeyJobCounter: in a keyed lane a key's
// available jobs wait in a heap of their own; the lanes of a queue that is
// not keyed (whose keys may keep slots taken before its limit per key was
// cleared) are counted in one pass over the jobs.
func (s *Store) KeysWithJobs(ctx context.Context) ([]store.KeyJobs, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	states := s.listKeys("")
	queues := map[string]bool{}
	for _, k := range states {
		queues[k.Queue] = true
	}
	avail := map[qkey]int{}
	scan := false
	for _, l := range s.lanes {
		switch {
		case !queues[l.queue]:
		case !l.keyed:
			scan = true
		default:
			for key, h := range l.byKey {
				avail[qkey{l.queue, key}] += h.len()
			}
		}
	}
	if scan {
		for e := range s.jobs.from(0, false) {
			if e.state == job.StateAvailable && !e.l.keyed && queues[e.l.queue] && e.keyOf() != "" {
				avail[qkey{e.l.queue, e.keyOf()}]++
			}
		}
	}
	out := []store.KeyJobs{}
	for _, k := range states {
		if n := avail[qkey{k.Queue, k.Key}]; n > 0 {
			out = append(out, store.KeyJobs{KeyState: k, Available: n})
		}
	}
	return out, nil
}

// ListKeys implements store.KeyControl.
func (s *Store) ListKeys(ctx context.Context, queue string) ([]store.KeyState, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	return s.listKeys(queue), nil
}

// listKeys is ListKeys, s.mu held.
func (s *Store) listKeys(queue string) []store.KeyState {
	out := []store.KeyState{}
	for q, k := range s.keys {
		if queue == "" || q.queue == queue {
			out = append(out, *k)
		}
	}
	byQueueKey := func(a, b store.KeyState) int {
		if c := strings.Compare(a.Queue, b.Queue); c != 0 {
			return c
		}
		return strings.Compare(a.Key, b.Key)
	}
	slices.SortFunc(out, byQueueKey)
	th := s.keyThrottles(queue)
	slices.SortFunc(th, byQueueKey)
	return store.MergeKeyThrottles(out, th)
}
