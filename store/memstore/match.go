package memstore

import (
	"context"
	"slices"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// batch returns the entries of p's next batch (see store.MatchParams): of
// the states of applies that p's filter keeps, queue and kind, with IDs in
// (AfterID, Last], at most Size of them, in ID order. The caller holds
// the lock.
func (s *Store) batch(p store.MatchParams, applies []job.State) []*entry {
	states := p.Candidates(applies)
	if len(states) == 0 {
		return nil
	}
	last, size := p.Last(), p.Size()
	var out []*entry
	for e := range s.jobs.from(p.AfterID, false) {
		if e.id > last {
			break
		}
		if slices.Contains(states, e.state) && (p.Queue == "" || e.l.queue == p.Queue) && (p.Kind == "" || e.l.kind == p.Kind) &&
			!slices.Contains(p.ExceptKinds, e.l.kind) {
			out = append(out, e)
			if len(out) == size {
				break
			}
		}
	}
	return out
}

// match runs one batch of a bulk action: act changes an entry of the
// batch and reports whether it did (false: skipped).
func (s *Store) match(p store.MatchParams, applies []job.State, act func(e *entry) (bool, error)) (store.MatchResult, error) {
	if err := p.Validate(); err != nil {
		return store.MatchResult{}, err
	}
	if err := s.lock(); err != nil {
		return store.MatchResult{}, err
	}
	defer s.mu.Unlock()
	var res store.MatchResult
	if len(p.Candidates(applies)) == 0 {
		return res, nil // nothing in the selection: done
	}
	batch := s.batch(p, applies)
	var last job.ID
	for _, e := range batch {
		last = e.id
		ok, err := act(e)
		if err != nil {
			return res, err
		}
		if !ok {
			res.Skipped++
			continue
		}
		res.Changed++
		if p.ReturnJobs {
			if j := s.jobs.get(e.id); j != nil {
				res.Jobs = append(res.Jobs, j.job())
			}
		}
	}
	res.Next = p.Next(len(batch), last)
	return res, nil
}

// CancelMatching implements store.Store.
func (s *Store) CancelMatching(ctx context.Context, p store.MatchParams) (store.MatchResult, error) {
	var running []job.ID
	res, err := s.match(p, store.CancelStates, func(e *entry) (bool, error) {
		var v job.Job
		e.view(&v)
		if err := store.ApplyCancel(&v, p.Now); err != nil {
			return false, err
		}
		s.update(e, &v)
		if e.state == job.StateRunning {
			running = append(running, e.id)
		}
		return true, nil
	})
	res.Running = running
	if len(running) > 0 {
		s.cancels.Signal()
	}
	return res, err
}

// RetryMatching implements store.Store.
func (s *Store) RetryMatching(ctx context.Context, p store.MatchParams) (store.MatchResult, error) {
	return s.match(p, store.RetryStates, func(e *entry) (bool, error) { return s.retryDead(e, p.Now) })
}

// DeleteMatching implements store.Store.
func (s *Store) DeleteMatching(ctx context.Context, p store.MatchParams) (store.MatchResult, error) {
	p.ReturnJobs = false
	return s.match(p, store.DeleteStates, func(e *entry) (bool, error) {
		s.delete(e)
		return true, nil
	})
}
