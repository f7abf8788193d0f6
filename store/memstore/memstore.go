// Package memstore is Hopper's in-memory store: per-queue binary heaps and
// maps under one mutex. It is the fastest backend and the only one that can
// hold plain Go closures (job.Func); everything is lost when the process
// exits. It is also the store Hopper's engine tests run on.
//
// Every operation is O(log n) in the number of waiting jobs, except List,
// Purge and the Finished counts of Stats, which scan what they report on.
package memstore

import (
	"context"
	"sort"
	"sync"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// Store is an in-memory store.Store. The zero value is not usable; call New.
type Store struct {
	mu        sync.Mutex
	closed    bool
	lastID    job.ID
	jobs      index
	queues    map[string]*queue
	qlist     []*queue // sorted by name
	running   list
	unique    map[string]*entry       // key → holder, while waiting or running
	finished  [job.StateDead + 1]list // completed, cancelled and dead, in finish order
	fired     map[fireKey]job.ID
	schedules map[string]*job.Schedule
}

type queue struct {
	name   string
	ready  jobHeap // available jobs by (priority, run-at, ID)
	timed  jobHeap // scheduled and retrying jobs by (run-at, ID)
	counts [job.StateDead + 1]int
}

type fireKey struct {
	schedule string
	at       int64
}

var _ store.Store = (*Store)(nil)

// New returns an empty store.
func New() *Store {
	return &Store{
		queues:    make(map[string]*queue),
		unique:    make(map[string]*entry),
		fired:     make(map[fireKey]job.ID),
		schedules: make(map[string]*job.Schedule),
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

func (s *Store) queue(name string) *queue {
	q := s.queues[name]
	if q == nil {
		q = &queue{name: name, timed: jobHeap{timed: true}}
		s.queues[name] = q
		i := sort.Search(len(s.qlist), func(i int) bool { return s.qlist[i].name > name })
		s.qlist = append(s.qlist, nil)
		copy(s.qlist[i+1:], s.qlist[i:])
		s.qlist[i] = q
	}
	return q
}

// setState moves e to state to, keeping the per-queue counts, the running
// and finished sets and the unique-key index in step. It does not touch the
// heaps.
func (s *Store) setState(e *entry, to job.State) {
	from := e.state
	e.q.counts[from]--
	e.q.counts[to]++
	e.state = to
	if from == job.StateRunning {
		s.running.remove(e)
	}
	if from.Finished() {
		s.finished[from].remove(e)
	}
	switch {
	case to == job.StateRunning:
		e.cold()
		s.running.push(e)
	case to.Finished():
		e.cold()
		s.finished[to].push(e)
		if k := e.uniqueKey(); k != "" && s.unique[k] == e {
			delete(s.unique, k)
		}
	}
}

// enqueueHeap puts a waiting entry in the heap its state calls for.
func (s *Store) enqueueHeap(e *entry) {
	if e.state == job.StateAvailable {
		e.q.ready.push(e)
	} else {
		e.q.timed.push(e)
	}
}

// dequeueHeap takes a waiting entry out of its heap.
func (s *Store) dequeueHeap(e *entry) {
	if e.idx < 0 {
		return
	}
	if e.state == job.StateAvailable {
		e.q.ready.remove(int(e.idx))
	} else {
		e.q.timed.remove(int(e.idx))
	}
}

// Enqueue implements store.Store.
func (s *Store) Enqueue(ctx context.Context, p store.EnqueueParams) ([]store.EnqueueResult, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	// Check everything before changing anything: all or nothing.
	for _, j := range p.Jobs {
		if j.Schedule != "" {
			if _, ok := s.fired[fireKey{j.Schedule, store.UnixNanos(j.FireTime)}]; ok {
				return nil, job.ErrDuplicate
			}
		}
	}
	res := make([]store.EnqueueResult, len(p.Jobs))
	for i, j := range p.Jobs {
		// An earlier job of this same call holds its key by now too.
		if h := s.unique[j.UniqueKey]; j.UniqueKey != "" && h != nil {
			res[i] = store.EnqueueResult{ID: h.id, Duplicate: true, State: h.state}
			continue
		}
		e := s.insert(j)
		res[i] = store.EnqueueResult{ID: e.id, State: e.state}
	}
	return res, nil
}

// insert adds a validated job whose unique key is free.
func (s *Store) insert(j *job.Job) *entry {
	s.lastID++
	e := newEntry(j, s.lastID, s.queue(j.Queue))
	e.q.counts[e.state]++
	s.jobs.put(e)
	s.enqueueHeap(e)
	if k := j.UniqueKey; k != "" {
		s.unique[k] = e
	}
	if j.Schedule != "" {
		s.fired[fireKey{j.Schedule, store.UnixNanos(j.FireTime)}] = e.id
	}
	return e
}

// promote moves q's scheduled and retrying entries whose time has come to
// the ready heap.
func (s *Store) promote(q *queue, now int64) {
	for {
		e := q.timed.peek()
		if e == nil || e.runAt > now {
			return
		}
		q.timed.pop()
		s.setState(e, job.StateAvailable)
		q.ready.push(e)
	}
}

// Claim implements store.Store.
func (s *Store) Claim(ctx context.Context, p store.ClaimParams) (store.ClaimResult, error) {
	if err := s.lock(); err != nil {
		return store.ClaimResult{}, err
	}
	defer s.mu.Unlock()
	now := store.UnixNanos(p.Now)
	qs := s.qlist
	if len(p.Queues) > 0 {
		qs = make([]*queue, 0, len(p.Queues))
		for _, name := range p.Queues {
			if q := s.queues[name]; q != nil {
				qs = append(qs, q)
			}
		}
	}
	var taken map[*queue]int
	if len(p.QueueLimits) > 0 {
		taken = make(map[*queue]int)
	}
	for _, q := range qs {
		s.promote(q, now)
	}
	var res store.ClaimResult
	var slab []job.Job // the returned copies, allocated together
	lease, worker := store.UnixNanos(p.LeaseUntil), p.Worker
	for len(res.Jobs) < p.Limit {
		var best *queue
		for _, q := range qs {
			if q.ready.len() == 0 {
				continue
			}
			if taken != nil {
				if lim, ok := p.QueueLimits[q.name]; ok && taken[q] >= lim {
					continue
				}
			}
			if best == nil || best.ready.less(q.ready.head(), best.ready.head()) {
				best = q
			}
		}
		if best == nil {
			break
		}
		e := best.ready.pop()
		if taken != nil {
			taken[best]++
		}
		s.setState(e, job.StateRunning)
		e.attempt++
		e.cancel = false
		c := e.cold()
		c.startedAt, c.leaseUntil, c.worker = now, lease, worker
		if len(slab) == cap(slab) {
			slab = make([]job.Job, 0, min(p.Limit-len(res.Jobs), 64))
		}
		slab = slab[:len(slab)+1]
		e.fill(&slab[len(slab)-1])
		res.Jobs = append(res.Jobs, &slab[len(slab)-1])
	}
	var next int64
	for _, q := range qs {
		if e := q.timed.peek(); e != nil && (next == 0 || e.runAt < next) {
			next = e.runAt
		}
	}
	res.NextRunAt = store.FromUnixNanos(next)
	return res, nil
}

// Finish implements store.Store.
func (s *Store) Finish(ctx context.Context, p store.FinishParams) ([]bool, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	for _, o := range p.Outcomes {
		if err := job.CheckTransition(o.ID, job.StateRunning, o.State); err != nil {
			return nil, err
		}
	}
	now := store.UnixNanos(p.Now)
	applied := make([]bool, len(p.Outcomes))
	for i := range p.Outcomes {
		o := &p.Outcomes[i]
		e := s.jobs.get(o.ID)
		if e == nil || e.state != job.StateRunning || int(e.attempt) != o.Attempt {
			continue
		}
		applied[i] = true
		c := e.c // set by Claim
		c.worker, c.leaseUntil = "", 0
		c.attempts = append(c.attempts, o.Record)
		if o.Error != "" {
			c.lastError = o.Error
		}
		switch o.State {
		case job.StateCompleted:
			c.result = o.Result
			c.crashes = 0
			c.finishedAt = now
			s.setState(e, o.State)
		case job.StateDead, job.StateCancelled:
			c.crashes = 0
			c.finishedAt = now
			s.setState(e, o.State)
		case job.StateRetrying:
			c.crashes = 0
			e.runAt = store.UnixNanos(o.RunAt)
			s.setState(e, o.State)
			e.q.timed.push(e)
		case job.StateAvailable: // released: the attempt does not count
			e.attempt--
			s.setState(e, o.State)
			e.q.ready.push(e)
		}
	}
	return applied, nil
}
