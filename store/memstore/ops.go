package memstore

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// Heartbeat implements store.Store.
func (s *Store) Heartbeat(ctx context.Context, p store.HeartbeatParams) (store.HeartbeatResult, error) {
	if err := s.lock(); err != nil {
		return store.HeartbeatResult{}, err
	}
	defer s.mu.Unlock()
	var res store.HeartbeatResult
	lease, now := store.UnixNanos(p.LeaseUntil), store.UnixNanos(p.Now)
	for _, l := range p.Jobs {
		e := s.jobs.get(l.ID)
		if e == nil || e.state != job.StateRunning || e.c.worker != p.Worker || e.c.claims != l.Claim {
			res.Lost = append(res.Lost, l)
			continue
		}
		e.c.leaseUntil = lease
		e.c.setBeat(now)
		if e.cancel {
			res.Cancel = append(res.Cancel, l.ID)
			if e.kill {
				res.Terminate = append(res.Terminate, l.ID)
			}
		}
	}
	return res, nil
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
	var v job.Job
	for _, e := range expired {
		e.view(&v)
		if err := store.ApplyRescue(&v, p.Now, store.FromUnixNanos(e.c.beat()), p.MaxCrashes); err != nil {
			return out, err
		}
		s.update(e, &v)
		out = append(out, e.job())
	}
	return out, nil
}

// Cancel implements store.Store.
func (s *Store) Cancel(ctx context.Context, p store.CancelParams) (*job.Job, error) {
	apply := store.ApplyCancel
	if p.Terminate {
		apply = store.ApplyTerminate
	}
	j, err := s.change(p.ID, func(j *job.Job) error { return apply(j, p.Now) })
	if err == nil && j.State == job.StateRunning {
		s.cancels.Signal()
	}
	return j, err
}

// WatchCancels implements store.CancelWatcher: a Cancel or CancelMatching
// of a running job signals every watcher at once.
func (s *Store) WatchCancels() (<-chan struct{}, func()) { return s.cancels.Watch() }

// Reschedule implements store.Store.
func (s *Store) Reschedule(ctx context.Context, p store.RescheduleParams) (*job.Job, error) {
	return s.change(p.ID, func(j *job.Job) error { return store.ApplyReschedule(j, p.RunAt, p.Priority, p.Now) })
}

// change applies a transition to job id and returns the job as it is
// afterwards; on an error it changes nothing and returns the job as it is
// (nil if not found).
func (s *Store) change(id job.ID, apply func(*job.Job) error) (*job.Job, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	e := s.jobs.get(id)
	if e == nil {
		return nil, fmt.Errorf("job %d: %w", id, job.ErrNotFound)
	}
	var v job.Job
	e.view(&v)
	if err := apply(&v); err != nil {
		return e.job(), err
	}
	s.update(e, &v)
	return e.job(), nil
}

// RetryDead implements store.Store.
func (s *Store) RetryDead(ctx context.Context, p store.RetryDeadParams) (int, error) {
	if err := p.Validate(); err != nil {
		return 0, err
	}
	if err := s.lock(); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	var dead []*entry
	if p.All {
		for e := range s.finished[job.StateDead].all {
			dead = append(dead, e)
		}
		slices.SortFunc(dead, func(a, b *entry) int { return int(a.id - b.id) })
	} else {
		for _, id := range p.IDs {
			if e := s.jobs.get(id); e != nil && e.state == job.StateDead && !slices.Contains(dead, e) {
				dead = append(dead, e)
			}
		}
	}
	n := 0
	for _, e := range dead {
		ok, err := s.retryDead(e, p.Now)
		if err != nil {
			return n, err
		}
		if ok {
			n++
		}
	}
	return n, nil
}

// retryDead applies store.ApplyRetryDead to the dead entry e, unless
// another unfinished job holds its unique key: then it reports false and
// changes nothing.
func (s *Store) retryDead(e *entry, now time.Time) (bool, error) {
	if k := e.uniqueKey(); k != "" {
		if s.unique[k] != nil {
			return false, nil // another unfinished job holds the key
		}
		s.unique[k] = e
	}
	var v job.Job
	e.view(&v)
	if err := store.ApplyRetryDead(&v, now); err != nil {
		return false, err
	}
	s.update(e, &v)
	return true, nil
}

// Purge implements store.Store.
func (s *Store) Purge(ctx context.Context, p store.PurgeParams) (int, error) {
	if err := p.Validate(); err != nil {
		return 0, err
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
	for _, st := range slices.Compact(slices.Sorted(slices.Values(p.States))) {
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
	delete(s.unnoted, e)
	e.l.counts[e.state]--
	s.jobs.del(e.id)
	delete(s.outputs, e.id)
	if o := e.opt(); o.schedule != "" {
		delete(s.fired, fireKey{o.schedule, o.fireTime})
	}
}
