package memstore

import (
	"context"
	"fmt"
	"slices"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// Heartbeat implements store.Store.
func (s *Store) Heartbeat(ctx context.Context, p store.HeartbeatParams) ([]job.ID, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var cancelled []job.ID
	lease := store.UnixNanos(p.LeaseUntil)
	for _, id := range p.IDs {
		e := s.jobs.get(id)
		if e == nil || e.state != job.StateRunning || e.c.worker != p.Worker {
			continue
		}
		e.c.leaseUntil = lease
		if e.cancel {
			cancelled = append(cancelled, id)
		}
	}
	return cancelled, nil
}

// Rescue implements store.Store.
func (s *Store) Rescue(ctx context.Context, p store.RescueParams) ([]*job.Job, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	now := store.UnixNanos(p.Now)
	var expired []*entry
	for e := range s.running.all {
		if e.c.leaseUntil < now {
			expired = append(expired, e)
		}
	}
	slices.SortFunc(expired, func(a, b *entry) int { return int(a.id - b.id) })
	out := make([]*job.Job, 0, len(expired))
	for _, e := range expired {
		c := e.c
		c.crashes++
		c.attempts = append(c.attempts, job.Attempt{
			Attempt:   int(e.attempt),
			StartedAt: store.FromUnixNanos(c.startedAt),
			Duration:  store.FromUnixNanos(now).Sub(store.FromUnixNanos(c.startedAt)),
			Worker:    c.worker,
			Outcome:   job.OutcomeInterrupted,
			Error:     "worker lost: lease expired",
		})
		c.worker, c.leaseUntil = "", 0
		switch {
		case p.MaxCrashes > 0 && c.crashes >= p.MaxCrashes:
			c.lastError = fmt.Sprintf("poison pill: the worker died %d times in a row running this job", c.crashes)
			c.finishedAt = now
			s.setState(e, job.StateDead)
		case int(e.attempt) >= int(e.maxAtt):
			c.lastError = fmt.Sprintf("attempts exhausted: the worker died during attempt %d of %d", e.attempt, e.maxAtt)
			c.finishedAt = now
			s.setState(e, job.StateDead)
		default:
			e.runAt = now
			s.setState(e, job.StateAvailable)
			e.q.ready.push(e)
		}
		out = append(out, e.job())
	}
	return out, nil
}

// Cancel implements store.Store.
func (s *Store) Cancel(ctx context.Context, p store.CancelParams) (*job.Job, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	e := s.jobs.get(p.ID)
	switch {
	case e == nil:
		return nil, fmt.Errorf("job %d: %w", p.ID, job.ErrNotFound)
	case e.state == job.StateRunning:
		e.cancel = true
	case e.state.Waiting():
		s.dequeueHeap(e)
		e.cold().finishedAt = store.UnixNanos(p.Now)
		s.setState(e, job.StateCancelled)
	default:
		return e.job(), fmt.Errorf("job %d is %s: %w", p.ID, e.state, job.ErrNotWaiting)
	}
	return e.job(), nil
}

// Reschedule implements store.Store.
func (s *Store) Reschedule(ctx context.Context, p store.RescheduleParams) (*job.Job, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	e := s.jobs.get(p.ID)
	if e == nil {
		return nil, fmt.Errorf("job %d: %w", p.ID, job.ErrNotFound)
	}
	if !e.state.Waiting() {
		return e.job(), fmt.Errorf("job %d is %s: %w", p.ID, e.state, job.ErrNotWaiting)
	}
	s.dequeueHeap(e)
	if !p.RunAt.IsZero() {
		e.runAt = store.UnixNanos(p.RunAt)
	}
	if p.Priority != nil {
		e.priority = *p.Priority
	}
	s.setState(e, job.WaitingState(store.FromUnixNanos(e.runAt), p.Now))
	s.enqueueHeap(e)
	return e.job(), nil
}

// RetryDead implements store.Store.
func (s *Store) RetryDead(ctx context.Context, p store.RetryDeadParams) (int, error) {
	if err := s.lock(); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	var dead []*entry
	if len(p.IDs) == 0 {
		for e := range s.finished[job.StateDead].all {
			dead = append(dead, e)
		}
		slices.SortFunc(dead, func(a, b *entry) int { return int(a.id - b.id) })
	} else {
		for _, id := range p.IDs {
			if e := s.jobs.get(id); e != nil && e.state == job.StateDead {
				dead = append(dead, e)
			}
		}
	}
	n := 0
	for _, e := range dead {
		if k := e.uniqueKey(); k != "" {
			if s.unique[k] != nil {
				continue // another unfinished job holds the key
			}
			s.unique[k] = e
		}
		e.attempt = 0
		e.runAt = store.UnixNanos(p.Now)
		e.c.crashes = 0
		e.c.finishedAt = 0
		s.setState(e, job.StateAvailable)
		e.q.ready.push(e)
		n++
	}
	return n, nil
}

// Purge implements store.Store.
func (s *Store) Purge(ctx context.Context, p store.PurgeParams) (int, error) {
	for _, st := range p.States {
		if !st.Finished() {
			return 0, job.Invalid("states", "can only purge completed, cancelled or dead jobs, not %s", st)
		}
	}
	if err := s.lock(); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	var ids map[job.ID]bool
	if len(p.IDs) > 0 {
		ids = make(map[job.ID]bool, len(p.IDs))
		for _, id := range p.IDs {
			ids[id] = true
		}
	}
	before := store.UnixNanos(p.Before)
	n := 0
	for _, st := range p.States {
		var match []*entry
		for e := range s.finished[st].all {
			if (ids == nil || ids[e.id]) && (before == 0 || e.c.finishedAt < before) {
				match = append(match, e)
			}
		}
		if p.KeepNewest > 0 {
			if len(match) <= p.KeepNewest {
				continue
			}
			// Newest first; spare the first KeepNewest.
			slices.SortFunc(match, func(a, b *entry) int {
				if a.c.finishedAt != b.c.finishedAt {
					if a.c.finishedAt > b.c.finishedAt {
						return -1
					}
					return 1
				}
				return int(b.id - a.id)
			})
			match = match[p.KeepNewest:]
		}
		for _, e := range match {
			s.delete(e)
			n++
		}
	}
	return n, nil
}

func (s *Store) delete(e *entry) {
	s.finished[e.state].remove(e)
	e.q.counts[e.state]--
	s.jobs.del(e.id)
	if e.c != nil && e.c.schedule != "" {
		delete(s.fired, fireKey{e.c.schedule, e.c.fireTime})
	}
}
