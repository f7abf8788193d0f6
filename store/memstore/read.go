package memstore

import (
	"context"
	"fmt"
	"slices"
	"time"

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

// List implements store.Store. It walks the ID index from the cursor and
// stops at the limit, except when only finished states are asked for and
// they are the smaller part of the store: then it scans their sets.
func (s *Store) List(ctx context.Context, p store.ListParams) ([]*job.Job, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	limit := p.PageLimit()
	after, before := store.UnixNanos(p.CreatedAfter), store.UnixNanos(p.CreatedBefore)
	keep := func(e *entry) bool {
		return (p.Queue == "" || e.l.queue == p.Queue) && (p.Kind == "" || e.l.kind == p.Kind) &&
			(len(p.States) == 0 || slices.Contains(p.States, e.state)) &&
			(after == 0 || e.created >= after) && (before == 0 || e.created < before) &&
			(p.Tag == "" || slices.Contains(e.opt().tags, p.Tag))
	}
	var match []*entry
	finished, onlyFinished := 0, len(p.States) > 0
	for _, st := range p.States {
		onlyFinished = onlyFinished && st.Finished()
		if st.Finished() {
			finished += s.finished[st].n
		}
	}
	if onlyFinished && finished < s.jobs.n/2 {
		for _, st := range slices.Compact(slices.Sorted(slices.Values(p.States))) {
			for e := range s.finished[st].all {
				if keep(e) && (p.AfterID == 0 || !p.Desc && e.id > p.AfterID || p.Desc && e.id < p.AfterID) {
					match = append(match, e)
				}
			}
		}
		slices.SortFunc(match, func(a, b *entry) int {
			if p.Desc {
				a, b = b, a
			}
			return int(a.id - b.id)
		})
		match = match[:min(len(match), limit)]
	} else {
		for e := range s.jobs.from(p.AfterID, p.Desc) {
			if keep(e) {
				match = append(match, e)
				if len(match) == limit {
					break
				}
			}
		}
	}
	out := make([]*job.Job, len(match))
	for i, e := range match {
		out[i] = e.job()
	}
	return out, nil
}

// Count implements store.Store, from the per-lane counters.
func (s *Store) Count(ctx context.Context, p store.ListParams) (int, error) {
	if err := s.lock(); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	states := slices.Compact(slices.Sorted(slices.Values(p.States)))
	if len(states) == 0 {
		states = job.States
	}
	n := 0
	if p.Tag != "" {
		// No index: a scan of the jobs, O(n), as List's of a rare tag.
		for e := range s.jobs.from(0, false) {
			if slices.Contains(e.opt().tags, p.Tag) && (p.Queue == "" || e.l.queue == p.Queue) &&
				(p.Kind == "" || e.l.kind == p.Kind) && slices.Contains(states, e.state) {
				n++
			}
		}
		return n, nil
	}
	for _, l := range s.llist {
		if p.Queue != "" && l.queue != p.Queue || p.Kind != "" && l.kind != p.Kind {
			continue
		}
		for _, st := range states {
			n += l.counts[st]
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
	for _, l := range s.llist {
		for _, state := range job.States {
			if n := l.counts[state]; n > 0 {
				m := st.ByQueue[l.queue]
				if m == nil {
					m = make(map[job.State]int)
					st.ByQueue[l.queue] = m
				}
				m[state] += n
			}
		}
	}
	for _, l := range s.llist {
		oldest := func(h int64) {
			if h == 0 {
				return
			}
			if st.OldestAvailable == nil {
				st.OldestAvailable = make(map[string]time.Time)
			}
			if o, ok := st.OldestAvailable[l.queue]; !ok || store.FromUnixNanos(h).Before(o) {
				st.OldestAvailable[l.queue] = store.FromUnixNanos(h)
			}
		}
		oldest(l.ready.oldest())
		for _, h := range l.byKey { // a keyed lane's (keys.go)
			oldest(h.oldest())
		}
	}
	if since := store.UnixNanos(p.FinishedSince); since != 0 {
		if n := store.Steps(p.FinishedSince, p.Now, p.Step); n > 0 {
			st.Series = make(map[job.State][]int)
			for _, state := range []job.State{job.StateCompleted, job.StateCancelled, job.StateDead} {
				st.Series[state] = make([]int, n)
			}
		}
		for _, state := range []job.State{job.StateCompleted, job.StateCancelled, job.StateDead} {
			for e := range s.finished[state].all {
				if e.c.finishedAt >= since {
					st.Finished[state]++
					if st.Series != nil {
						if i := int((e.c.finishedAt - since) / int64(p.Step)); i < len(st.Series[state]) {
							st.Series[state][i]++
						}
					}
					if f := store.FromUnixNanos(e.c.finishedAt); st.FirstFinished.IsZero() || f.Before(st.FirstFinished) {
						st.FirstFinished = f
					}
				}
			}
		}
	}
	return st, nil
}
