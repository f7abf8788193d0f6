package memstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// OpenIncident implements store.Store.
func (s *Store) OpenIncident(ctx context.Context, p store.OpenIncidentParams) (store.IncidentResult, error) {
	if err := store.CheckIncident(p.Incident); err != nil {
		return store.IncidentResult{}, err
	}
	if err := s.lock(); err != nil {
		return store.IncidentResult{}, err
	}
	defer s.mu.Unlock()
	for _, in := range s.incidents {
		if in.Open() && in.Subject == p.Incident.Subject && in.Problem == p.Incident.Problem {
			c := *in
			return store.IncidentResult{Incident: &c}, nil
		}
	}
	in := *p.Incident
	in.ID = int64(len(s.incidents)) + 1
	in.OpenedAt = store.FromUnixNanos(store.UnixNanos(in.OpenedAt))
	jobs, err := store.NotifyJobs(p.Notify, &in)
	if err != nil {
		return store.IncidentResult{}, err
	}
	s.incidents = append(s.incidents, &in)
	if sc := s.schedules[p.Pause]; p.Pause != "" && sc != nil {
		sc.Paused = true
	}
	c := in
	return store.IncidentResult{Changed: true, Incident: &c, Jobs: s.insertAll(jobs)}, nil
}

// insertAll inserts jobs, checked by store.NotifyJobs, and returns their
// IDs.
func (s *Store) insertAll(jobs []*job.Job) []job.ID {
	var ids []job.ID
	for _, j := range jobs {
		ids = append(ids, s.insert(j).id)
	}
	return ids
}

// ResolveIncident implements store.Store.
func (s *Store) ResolveIncident(ctx context.Context, p store.ResolveIncidentParams) (store.IncidentResult, error) {
	if p.At.IsZero() {
		return store.IncidentResult{}, job.Invalid("at", "must be set")
	}
	if err := s.lock(); err != nil {
		return store.IncidentResult{}, err
	}
	defer s.mu.Unlock()
	if p.ID < 1 || p.ID > int64(len(s.incidents)) {
		return store.IncidentResult{}, fmt.Errorf("incident %d: %w", p.ID, job.ErrNotFound)
	}
	in := s.incidents[p.ID-1]
	if !in.Open() {
		c := *in
		return store.IncidentResult{Incident: &c}, nil
	}
	c := *in
	c.ResolvedAt = store.FromUnixNanos(store.UnixNanos(p.At))
	jobs, err := store.NotifyJobs(p.Notify, &c)
	if err != nil {
		return store.IncidentResult{}, err
	}
	*in = c
	return store.IncidentResult{Changed: true, Incident: &c, Jobs: s.insertAll(jobs)}, nil
}

// ListIncidents implements store.Store.
func (s *Store) ListIncidents(ctx context.Context, p store.ListIncidentsParams) ([]*job.Incident, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	limit := store.ListParams{Limit: p.Limit}.PageLimit()
	out := []*job.Incident{}
	for i := len(s.incidents) - 1; i >= 0 && len(out) < limit; i-- {
		in := s.incidents[i]
		if p.BeforeID > 0 && in.ID >= p.BeforeID || p.Subject != "" && in.Subject != p.Subject || p.OpenOnly && !in.Open() {
			continue
		}
		c := *in
		out = append(out, &c)
	}
	return out, nil
}

// PutChannel implements store.Store.
func (s *Store) PutChannel(ctx context.Context, c *job.Channel) error {
	if err := c.Check(); err != nil {
		return err
	}
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	c.CreatedAt = store.FromUnixNanos(store.UnixNanos(c.CreatedAt))
	s.channels[c.Name] = c.Clone()
	return nil
}

// GetChannel implements store.Store.
func (s *Store) GetChannel(ctx context.Context, name string) (*job.Channel, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	c := s.channels[name]
	if c == nil {
		return nil, fmt.Errorf("channel %q: %w", name, job.ErrNotFound)
	}
	return c.Clone(), nil
}

// ListChannels implements store.Store.
func (s *Store) ListChannels(ctx context.Context) ([]*job.Channel, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := make([]*job.Channel, 0, len(s.channels))
	for _, c := range s.channels {
		out = append(out, c.Clone())
	}
	slices.SortFunc(out, func(a, b *job.Channel) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// RemoveChannel implements store.Store.
func (s *Store) RemoveChannel(ctx context.Context, name string) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if s.channels[name] == nil {
		return fmt.Errorf("channel %q: %w", name, job.ErrNotFound)
	}
	delete(s.channels, name)
	return nil
}

// LastRuns implements store.Store: a walk down the ID index, O(jobs) for
// a schedule whose runs are old.
func (s *Store) LastRuns(ctx context.Context, p store.LastRunsParams) ([]*job.Job, error) {
	if p.Limit < 1 {
		return nil, job.Invalid("limit", "must be at least 1, got %d", p.Limit)
	}
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var out []*job.Job
	for e := range s.jobs.from(0, true) {
		if (e.state == job.StateCompleted || e.state == job.StateDead) && e.opt().schedule == p.Schedule {
			out = append(out, e.job())
			if len(out) == p.Limit {
				break
			}
		}
	}
	return out, nil
}

// PendingDeaths implements store.Store.
func (s *Store) PendingDeaths(ctx context.Context, limit int) ([]*job.Job, error) {
	if err := store.CheckPendingLimit(limit); err != nil {
		return nil, err
	}
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	es := make([]*entry, 0, len(s.unnoted))
	for e := range s.unnoted {
		es = append(es, e)
	}
	slices.SortFunc(es, func(a, b *entry) int { return cmp.Compare(a.id, b.id) })
	out := []*job.Job{}
	for _, e := range es[:min(limit, len(es))] {
		out = append(out, e.job())
	}
	return out, nil
}

// NoteDeaths implements store.Store.
func (s *Store) NoteDeaths(ctx context.Context, p store.NoteDeathsParams) (store.NoteDeathsResult, error) {
	if err := s.lock(); err != nil {
		return store.NoteDeathsResult{}, err
	}
	defer s.mu.Unlock()
	var res store.NoteDeathsResult
	var noted []*entry
	var jobs []*job.Job
	for _, d := range p.Deaths {
		e := s.jobs.get(d.ID)
		if _, ok := s.unnoted[e]; !ok || e.c.finishedAt != store.UnixNanos(d.FinishedAt) || slices.Contains(noted, e) {
			continue
		}
		js, err := store.DeathJobs(p.Notify, d)
		if err != nil {
			return store.NoteDeathsResult{}, err
		}
		noted, jobs = append(noted, e), append(jobs, js...)
		res.Noted = append(res.Noted, e.id)
	}
	for _, e := range noted {
		delete(s.unnoted, e)
	}
	res.Jobs = s.insertAll(jobs)
	return res, nil
}
