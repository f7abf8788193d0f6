// Package memstore is Hopper's in-memory store: heaps and maps under one
// mutex. It is the fastest backend and the only one that can hold plain Go
// closures (job.Func); everything is lost when the process exits. It is also
// the store Hopper's engine tests run on.
//
// Waiting jobs live in lanes, one per (queue, kind), each with a ready heap
// and a timed heap, so a claim for some queues and kinds looks only at
// theirs. Every operation is O(log n) in the number of waiting jobs (times
// the number of lanes a claim looks at), except List, Purge and the
// Finished counts of Stats, which scan what they report on.
package memstore

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// Store is an in-memory store.Store. The zero value is not usable; call New.
type Store struct {
	mu        sync.Mutex
	cancels   store.Signals // WatchCancels
	closed    bool
	lastID    job.ID
	jobs      index
	lanes     map[laneKey]*lane
	llist     []*lane // sorted by (queue, kind)
	running   list
	unique    map[string]*entry       // key → holder, while waiting or running
	finished  [job.StateDead + 1]list // completed, cancelled and dead, in finish order
	unnoted   map[*entry]struct{}     // dead jobs whose death is not noted (PendingDeaths)
	fired     map[fireKey]job.ID
	schedules map[string]*job.Schedule
	incidents []*job.Incident             // by ID - 1 (monitor.go)
	channels  map[string]*job.Channel     // notification channels by name
	checks    map[string]*memCheck        // external checks by name (checks.go)
	leases    map[string]*lease           // by led name
	servers   map[string]store.Server     // by ID (servers.go)
	queues    map[string]store.QueueState // queues not in the zero state (queues.go)
	paused    int                         // how many of them are paused
	limited   int                         // how many have a Concurrency limit
	throttled int                         // how many have a Rate
	gates     []gate                      // the throttled queues of the latest claim (queues.go)
	slotBuf   map[string]int              // the limits of the latest claim (queues.go)
	takenBuf  map[string]int              // the jobs the latest claim took per limited queue
	keyDrops  map[qkey]int                // the jobs the latest claim dropped per key, for any rate (keys.go)
	claimed   laneFilter                  // the lanes of the latest claim's filter
	keys      map[qkey]*store.KeyState    // keys with a state (keys.go)
	cursor    map[string]string           // per keyed queue, the key its latest claim served last
	keyTATs   map[string]*keyTATs         // per queue with a KeyRate, its keys' throttle states (keythrottle.go)
	outputs   map[job.ID][]kept           // attempts' outputs by job, by attempt (output.go)
	// scratch is the spare array a first attempt's record is appended to
	// (finishView); update copies it out if it must be kept.
	scratch [1]job.Attempt
}

// laneFilter is the answer of claimLanes for one filter. Lanes are never
// removed, so it holds while the number of lanes stays the same.
type laneFilter struct {
	queues, kinds []string
	nlanes        int
	lanes         []*lane
}

// lane holds the jobs of one queue and kind.
type lane struct {
	queue, kind string
	ready       jobHeap // available jobs by (priority, run-at, ID)
	timed       jobHeap // scheduled and retrying jobs by (run-at, ID)
	counts      [job.StateDead + 1]int
	// A keyed lane (keys.go) keeps its available jobs with a key in
	// byKey, one heap per key, the keys sorted in keyList.
	keyed   bool
	byKey   map[string]*jobHeap
	keyList []string
}

type laneKey struct{ queue, kind string }

type fireKey struct {
	schedule string
	at       int64
}

var _ store.Store = (*Store)(nil)

// New returns an empty store.
func New() *Store {
	return &Store{
		lanes:     make(map[laneKey]*lane),
		unique:    make(map[string]*entry),
		fired:     make(map[fireKey]job.ID),
		schedules: make(map[string]*job.Schedule),
		channels:  make(map[string]*job.Channel),
		checks:    make(map[string]*memCheck),
		unnoted:   make(map[*entry]struct{}),
	}
}

// Close marks the store closed; later operations return job.ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	return nil
}

func (s *Store) lock() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return job.ErrClosed
	}
	return nil
}

func (s *Store) lane(queue, kind string) *lane {
	k := laneKey{queue, kind}
	l := s.lanes[k]
	if l == nil {
		l = &lane{queue: queue, kind: kind, timed: jobHeap{timed: true}, keyed: s.keyedQueue(queue)}
		s.lanes[k] = l
		i, _ := slices.BinarySearchFunc(s.llist, l, compareLanes)
		s.llist = slices.Insert(s.llist, i, l)
	}
	return l
}

func compareLanes(a, b *lane) int {
	return cmp.Or(cmp.Compare(a.queue, b.queue), cmp.Compare(a.kind, b.kind))
}

// setState moves e to state to, keeping the per-lane counts, the running
// and finished sets and the unique-key index in step. It does not touch the
// heaps.
func (s *Store) setState(e *entry, to job.State) {
	from := e.state
	if from == job.StateRunning {
		s.releaseKeySlot(e)
	}
	e.l.counts[from]--
	e.l.counts[to]++
	e.state = to
	if from == job.StateRunning {
		s.running.remove(e)
	}
	if from.Finished() {
		s.finished[from].remove(e)
	}
	if from == job.StateDead {
		delete(s.unnoted, e)
	}
	switch {
	case to == job.StateRunning:
		e.cold()
		s.running.push(e)
	case to.Finished():
		e.cold()
		s.finished[to].push(e)
		if to == job.StateDead {
			s.unnoted[e] = struct{}{}
		}
		if k := e.uniqueKey(); k != "" && s.unique[k] == e {
			delete(s.unique, k)
		}
	}
}

// update writes back a transition applied to a view of e (entry.view):
// the mutable fields, the state with everything that follows it, and the
// heap the new state calls for.
func (s *Store) update(e *entry, j *job.Job) {
	s.dequeueHeap(e)
	e.priority = j.Priority
	e.runAt = store.UnixNanos(j.RunAt)
	e.attempt = int32(j.Attempt)
	e.cancel, e.kill = j.CancelRequested, j.TerminateRequested
	if e.c != nil || j.Attempts != nil || j.LastError != "" || !j.FinishedAt.IsZero() || j.Worker != "" || j.Claims != 0 {
		c := e.cold()
		c.result, c.lastError = j.Result, j.LastError
		c.keepAttempts(j, &s.scratch[0])
		c.startedAt, c.finishedAt = store.UnixNanos(j.StartedAt), store.UnixNanos(j.FinishedAt)
		c.leaseUntil, c.worker, c.crashes = store.UnixNanos(j.LeaseUntil), j.Worker, int32(j.Crashes)
		c.claims = j.Claims
	}
	if j.State != e.state {
		s.setState(e, j.State)
	}
	s.enqueueHeap(e)
}

// enqueueHeap puts a waiting entry in the heap its state calls for.
func (s *Store) enqueueHeap(e *entry) {
	switch e.state {
	case job.StateAvailable:
		if e.l.keyed {
			e.l.keyHeap(e.keyOf(), true).push(e)
			return
		}
		e.l.ready.push(e)
	case job.StateScheduled, job.StateRetrying:
		e.l.timed.push(e)
	}
}

// dequeueHeap takes a waiting entry out of its heap.
func (s *Store) dequeueHeap(e *entry) {
	if e.idx == -1 {
		return
	}
	if e.state == job.StateAvailable {
		if e.l.keyed {
			key := e.keyOf()
			e.l.keyHeap(key, false).remove(int(e.idx))
			e.l.dropKeyIfEmpty(key)
			return
		}
		e.l.ready.remove(int(e.idx))
	} else {
		e.l.timed.remove(int(e.idx))
	}
}

// Enqueue implements store.Store.
func (s *Store) Enqueue(ctx context.Context, p store.EnqueueParams) ([]store.EnqueueResult, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	// Check everything before changing anything: all or nothing.
	ticks := make(map[fireKey]bool)
	for i, j := range p.Jobs {
		if err := store.CheckNewJob(j, i, len(p.Jobs)); err != nil {
			return nil, err
		}
		if j.Tick() {
			k := fireKey{j.Schedule, store.UnixNanos(j.FireTime)}
			if _, ok := s.fired[k]; ok || ticks[k] {
				return nil, job.ErrDuplicate
			}
			ticks[k] = true
		}
	}
	res := make([]store.EnqueueResult, len(p.Jobs))
	for i, j := range p.Jobs {
		// An earlier job of this same call holds its key by now too.
		if h := s.unique[j.UniqueKey]; j.UniqueKey != "" && h != nil {
			if j.Debounce.IsZero() {
				res[i] = store.EnqueueResult{ID: h.id, Duplicate: true, State: h.state}
				continue
			}
			if r, insert := s.debounce(h, j, j.CreatedAt); !insert { // CreatedAt: the enqueue's time
				res[i] = r
				continue
			}
		}
		e := s.insert(j)
		res[i] = store.EnqueueResult{ID: e.id, State: e.state}
	}
	return res, nil
}

// debounce applies a debounced enqueue of j at now to h, the holder of
// its key: a waiting holder takes j in (store.ApplyDebounce); a running
// one gives its key up (store.TakeOverKey) and insert is true, for the
// caller to insert j.
func (s *Store) debounce(h *entry, j *job.Job, now time.Time) (res store.EnqueueResult, insert bool) {
	var v job.Job
	h.view(&v)
	if h.state == job.StateRunning && store.TakeOverKey(&v) == nil {
		o := *h.opt()
		o.unique = v.UniqueKey
		h.c.opt = &o // a running entry has its cold part
		delete(s.unique, j.UniqueKey)
		return res, true
	}
	if err := store.ApplyDebounce(&v, j, now); err != nil {
		// Not reached: a holder is waiting or running. Leave it be.
		return store.EnqueueResult{ID: h.id, Duplicate: true, State: h.state}, false
	}
	h.args = clone(v.Args)
	s.update(h, &v)
	return store.EnqueueResult{ID: h.id, Debounced: true, State: h.state}, false
}

// insert adds a validated job whose unique key is free.
func (s *Store) insert(j *job.Job) *entry {
	s.lastID++
	e := newEntry(j, s.lastID, s.lane(j.Queue, j.Kind))
	e.l.counts[e.state]++
	s.jobs.put(e)
	s.enqueueHeap(e)
	if k := j.UniqueKey; k != "" {
		s.unique[k] = e
	}
	if j.Tick() {
		s.fired[fireKey{j.Schedule, store.UnixNanos(j.FireTime)}] = e.id
	}
	return e
}

// promote makes l's scheduled and retrying entries whose time has come
// available (store.ApplyPromote).
func (s *Store) promote(l *lane, now int64) {
	for {
		e := l.timed.peek()
		if e == nil || e.runAt > now {
			return
		}
		l.timed.pop()
		s.setState(e, job.StateAvailable)
		s.enqueueHeap(e)
	}
}

// claimLanes returns the lanes a claim for queues and kinds looks at. The
// answer for the latest filter is kept until it or the lanes change: an
// engine claims with the same filter every time.
func (s *Store) claimLanes(queues, kinds []string) []*lane {
	if len(queues) == 0 && len(kinds) == 0 {
		return s.llist
	}
	c := &s.claimed
	if c.nlanes == len(s.llist) && slices.Equal(c.queues, queues) && slices.Equal(c.kinds, kinds) {
		return c.lanes
	}
	var out []*lane
	for _, l := range s.llist {
		if (len(queues) == 0 || slices.Contains(queues, l.queue)) && (len(kinds) == 0 || slices.Contains(kinds, l.kind)) {
			out = append(out, l)
		}
	}
	*c = laneFilter{queues: slices.Clone(queues), kinds: slices.Clone(kinds), nlanes: len(s.llist), lanes: out}
	return out
}

// Claim implements store.Store.
func (s *Store) Claim(ctx context.Context, p store.ClaimParams) (store.ClaimResult, error) {
	if err := s.lock(); err != nil {
		return store.ClaimResult{}, err
	}
	defer s.mu.Unlock()
	return s.claim(p)
}

// claim is Claim under s.mu.
func (s *Store) claim(p store.ClaimParams) (store.ClaimResult, error) {
	now := store.UnixNanos(p.Now)
	ls := s.claimLanes(p.Queues, p.Kinds)
	limits := s.slots(p.QueueLimits) // QueueLimits and the free slots of limited queues
	s.throttle(limits, p)            // and the starts throttled queues allow
	var taken map[string]int         // queue → jobs claimed, with limits
	if len(limits) > 0 {
		taken = s.takenBuf // reused: claims run under the lock, one at a time
		if taken == nil {
			taken = make(map[string]int)
			s.takenBuf = taken
		}
		clear(taken)
	}
	for _, l := range ls {
		s.promote(l, now)
	}
	if len(s.keyTATs) > 0 {
		s.collectKeyThrottles(now)
	}
	var keyUntil int64 // the earliest a throttled key allows a start
	clear(s.keyDrops)
	var res store.ClaimResult
	var slab []job.Job // the returned copies, allocated together
	var v job.Job
	for len(res.Jobs)+len(res.Dropped) < p.Limit { // (only keys' drops so far)
		var (
			best     *lane
			bestHeap *jobHeap
			bestKey  string
			bestDrop bool
		)
		for _, l := range ls {
			if s.held(l.queue) {
				continue
			}
			if taken != nil {
				if lim, ok := limits[l.queue]; ok && taken[l.queue] >= lim {
					res.Held = res.Held || (s.queues[l.queue].Concurrency > 0 && (l.ready.len() > 0 || len(l.keyList) > 0))
					continue
				}
			}
			h, key, drop := &l.ready, "", false
			if l.keyed {
				var blocked bool
				var until int64
				h, key, drop, blocked, until = s.keyCandidate(l, s.cursor[l.queue], p.Now)
				res.Held = res.Held || blocked
				if until != 0 && (keyUntil == 0 || until < keyUntil) {
					keyUntil = until
				}
				if h == nil {
					continue
				}
			}
			if h.len() == 0 {
				continue
			}
			switch {
			case best == nil:
			case l.keyed && best.queue == l.queue && key != bestKey: // keys in turn
				if !keyBefore(key, bestKey, s.cursor[l.queue]) {
					continue
				}
			case !h.less(h.head(), bestHeap.head()):
				continue
			}
			best, bestHeap, bestKey, bestDrop = l, h, key, drop
		}
		if best == nil {
			break
		}
		e := bestHeap.pop()
		if best.keyed {
			best.dropKeyIfEmpty(bestKey)
			if s.cursor == nil {
				s.cursor = make(map[string]string)
			}
			s.cursor[best.queue] = bestKey
			if bestDrop || s.overRate(best.queue) {
				if taken != nil {
					taken[best.queue]++ // a drop counts against the queue's share (endThrottle takes it off)
				}
				if err := s.dropKeyed(e, bestKey, bestDrop, p.Now, &res); err != nil {
					return store.ClaimResult{}, err
				}
				continue
			}
			s.takeKeySlot(e, p.Now)
			s.takeKeyThrottle(e, now)
		}
		if taken != nil {
			taken[best.queue]++
		}
		e.view(&v)
		if err := store.ApplyClaim(&v, p.Now, p.Worker, p.LeaseUntil); err != nil {
			return store.ClaimResult{}, err // an available job can always be claimed
		}
		s.update(e, &v)
		var j *job.Job
		if i := len(res.Jobs); i < len(p.Reuse) {
			j = p.Reuse[i]
		} else {
			if len(slab) == cap(slab) {
				slab = make([]job.Job, 0, min(p.Limit-len(res.Jobs), 64))
			}
			slab = slab[:len(slab)+1]
			j = &slab[len(slab)-1]
		}
		e.fill(j)
		if res.Jobs == nil {
			res.Jobs = make([]*job.Job, 0, min(p.Limit, 64))
		}
		res.Jobs = append(res.Jobs, j)
	}
	if taken != nil && !res.Held {
		// A queue filled to its limit by this claim holds its next jobs.
		for _, l := range ls {
			if lim, ok := limits[l.queue]; ok && taken[l.queue] >= lim && l.ready.len() > 0 && s.queues[l.queue].Concurrency > 0 {
				res.Held = true
				break
			}
		}
	}
	if err := s.endThrottle(ls, taken, p, &res); err != nil {
		return store.ClaimResult{}, err
	}
	if u := store.FromUnixNanos(keyUntil); keyUntil > now && (res.ThrottledUntil.IsZero() || u.Before(res.ThrottledUntil)) {
		res.ThrottledUntil = u
	}
	var next int64
	for _, l := range ls {
		if e := l.timed.peek(); e != nil && (next == 0 || e.runAt < next) {
			next = e.runAt
		}
	}
	res.NextRunAt = store.FromUnixNanos(next)
	return res, nil
}

// finishView is view for a transition that records an attempt: a job's
// first record is appended to the store's scratch array rather than a new
// one, which update copies out only if the record must be kept (a plain
// success is implied instead, cold.keepAttempts).
func (s *Store) finishView(e *entry, v *job.Job) {
	e.view(v)
	if v.Attempts == nil {
		s.scratch[0] = job.Attempt{}
		v.Attempts = s.scratch[:0]
	}
}

// Finish implements store.Store.
func (s *Store) Finish(ctx context.Context, p store.FinishParams) ([]job.State, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	return s.finish(p)
}

// FinishClaim implements store.FinishClaimer: Finish then Claim under one
// hold of the lock.
func (s *Store) FinishClaim(ctx context.Context, f store.FinishParams, c store.ClaimParams) ([]job.State, store.ClaimResult, error) {
	if err := s.lock(); err != nil {
		return nil, store.ClaimResult{}, err
	}
	defer s.mu.Unlock()
	reached, err := s.finish(f)
	if err != nil {
		return nil, store.ClaimResult{}, err
	}
	res, err := s.claim(c)
	return reached, res, err
}

// finish is Finish under s.mu.
func (s *Store) finish(p store.FinishParams) ([]job.State, error) {
	for _, o := range p.Outcomes {
		if err := job.CheckTransition(o.ID, job.StateRunning, o.State); err != nil {
			return nil, err
		}
	}
	reached := make([]job.State, len(p.Outcomes))
	var v job.Job
	for i := range p.Outcomes {
		o := p.Outcomes[i]
		e := s.jobs.get(o.ID)
		if e == nil {
			continue
		}
		o.Result, o.Record.Result = clone(o.Result), clone(o.Record.Result)
		s.finishView(e, &v)
		ok, err := store.ApplyFinish(&v, o, p.Now)
		if err != nil {
			return nil, err // checked above: cannot happen
		}
		if ok {
			s.update(e, &v)
			reached[i] = v.State
			s.holdKey(e, o.HoldKeyUntil, p.Now)
			if o.Output != nil {
				s.keepOutput(e, o, v.State, p.Now)
			}
		}
	}
	return reached, nil
}
