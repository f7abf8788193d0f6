package memstore

import (
	"context"
	"fmt"
	"slices"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, id job.ID) (*job.Job, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	e := s.jobs.get(id)
	if e == nil {
		return nil, fmt.Errorf("job %d: %w", id, job.ErrNotFound)
	}
	return e.job(), nil
}

// List implements store.Store.
func (s *Store) List(ctx context.Context, p store.ListParams) ([]*job.Job, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	limit := p.Limit
	if limit <= 0 {
		limit = 100
	}
	var match []*entry
	keep := func(e *entry) {
		if p.Queue != "" && e.q.name != p.Queue || p.Kind != "" && e.kind != p.Kind {
			return
		}
		if p.AfterID != 0 && (!p.Desc && e.id <= p.AfterID || p.Desc && e.id >= p.AfterID) {
			return
		}
		if len(p.States) > 0 && !slices.Contains(p.States, e.state) {
			return
		}
		match = append(match, e)
	}
	// Finished states have their own sets; scan those when they are all
	// that is asked for.
	onlyFinished := len(p.States) > 0
	for _, st := range p.States {
		onlyFinished = onlyFinished && st.Finished()
	}
	if onlyFinished {
		for _, st := range p.States {
			for e := range s.finished[st].all {
				keep(e)
			}
		}
	} else {
		for e := range s.jobs.all {
			keep(e)
		}
	}
	slices.SortFunc(match, func(a, b *entry) int {
		if p.Desc {
			a, b = b, a
		}
		return int(a.id - b.id)
	})
	if len(match) > limit {
		match = match[:limit]
	}
	out := make([]*job.Job, len(match))
	for i, e := range match {
		out[i] = e.job()
	}
	return out, nil
}

// Count implements store.Store. Counts by state and queue alone come from
// the per-queue counters; a kind filter scans the jobs.
func (s *Store) Count(ctx context.Context, p store.ListParams) (int, error) {
	if err := s.lock(); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	states := p.States
	if len(states) == 0 {
		states = job.States
	}
	n := 0
	if p.Kind == "" {
		for _, q := range s.qlist {
			if p.Queue != "" && q.name != p.Queue {
				continue
			}
			for _, st := range states {
				n += q.counts[st]
			}
		}
		return n, nil
	}
	for e := range s.jobs.all {
		if e.kind == p.Kind && (p.Queue == "" || e.q.name == p.Queue) && slices.Contains(states, e.state) {
			n++
		}
	}
	return n, nil
}

// Stats implements store.Store.
func (s *Store) Stats(ctx context.Context, p store.StatsParams) (store.Stats, error) {
	if err := s.lock(); err != nil {
		return store.Stats{}, err
	}
	defer s.mu.Unlock()
	st := store.Stats{ByQueue: make(map[string]map[job.State]int), Finished: make(map[job.State]int)}
	for _, q := range s.qlist {
		m := make(map[job.State]int)
		for _, state := range job.States {
			if n := q.counts[state]; n > 0 {
				m[state] = n
			}
		}
		if len(m) > 0 {
			st.ByQueue[q.name] = m
		}
	}
	if since := store.UnixNanos(p.FinishedSince); since != 0 {
		for _, state := range []job.State{job.StateCompleted, job.StateCancelled, job.StateDead} {
			for e := range s.finished[state].all {
				if e.c.finishedAt >= since {
					st.Finished[state]++
				}
			}
		}
	}
	return st, nil
}
