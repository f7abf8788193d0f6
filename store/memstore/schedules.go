package memstore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// AddSchedule implements store.Store.
func (s *Store) AddSchedule(ctx context.Context, p store.AddScheduleParams) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if _, ok := s.schedules[p.Schedule.Name]; ok && !p.Replace {
		return fmt.Errorf("schedule %q: %w", p.Schedule.Name, job.ErrDuplicate)
	}
	s.schedules[p.Schedule.Name] = p.Schedule.Clone()
	return nil
}

// GetSchedule implements store.Store.
func (s *Store) GetSchedule(ctx context.Context, name string) (*job.Schedule, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	sc := s.schedules[name]
	if sc == nil {
		return nil, fmt.Errorf("schedule %q: %w", name, job.ErrNotFound)
	}
	return sc.Clone(), nil
}

// ListSchedules implements store.Store.
func (s *Store) ListSchedules(ctx context.Context) ([]*job.Schedule, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := make([]*job.Schedule, 0, len(s.schedules))
	for _, sc := range s.schedules {
		out = append(out, sc.Clone())
	}
	slices.SortFunc(out, func(a, b *job.Schedule) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// UpdateSchedule implements store.Store.
func (s *Store) UpdateSchedule(ctx context.Context, p store.UpdateScheduleParams) (*job.Schedule, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	sc := s.schedules[p.Name]
	if sc == nil {
		return nil, fmt.Errorf("schedule %q: %w", p.Name, job.ErrNotFound)
	}
	if p.SetNext && !sc.NextRunAt.Equal(p.IfNext) {
		return sc.Clone(), fmt.Errorf("schedule %q: next run moved: %w", p.Name, job.ErrConflict)
	}
	if p.Paused != nil {
		sc.Paused = *p.Paused
	}
	if p.SetNext {
		sc.NextRunAt = p.Next
	}
	return sc.Clone(), nil
}

// RemoveSchedule implements store.Store.
func (s *Store) RemoveSchedule(ctx context.Context, name string) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if _, ok := s.schedules[name]; !ok {
		return fmt.Errorf("schedule %q: %w", name, job.ErrNotFound)
	}
	delete(s.schedules, name)
	return nil
}

// FireSchedule implements store.Store.
func (s *Store) FireSchedule(ctx context.Context, p store.FireScheduleParams) (store.FireResult, error) {
	if p.Job == nil {
		return store.FireResult{}, job.Invalid("job", "must not be nil")
	}
	if err := store.CheckNewJob(p.Job, 0, 1); err != nil {
		return store.FireResult{}, err
	}
	if err := p.CheckWith(); err != nil {
		return store.FireResult{}, err
	}
	if err := s.lock(); err != nil {
		return store.FireResult{}, err
	}
	defer s.mu.Unlock()
	res, err := s.fire(p)
	if err == nil && res.Changed() {
		s.insertAll(p.With)
	}
	return res, err
}

// fire makes FireSchedule's step, but for p.With, under s.mu.
func (s *Store) fire(p store.FireScheduleParams) (store.FireResult, error) {
	sc := s.schedules[p.Name]
	if sc == nil {
		return store.FireResult{}, fmt.Errorf("schedule %q: %w", p.Name, job.ErrNotFound)
	}
	if p.Release {
		return s.release(sc, p), nil
	}
	outside := p.Manual || p.Backfill // a run outside the chain of ticks
	if p.Backfill {
		if _, ok := s.fired[fireKey{p.Name, store.UnixNanos(p.FireTime)}]; ok {
			return store.FireResult{Existed: true}, nil
		}
	}
	if !outside {
		if sc.Paused || !sc.NextRunAt.Equal(p.From()) {
			return store.FireResult{}, nil
		}
		sc.NextRunAt = p.Next
		if _, ok := s.fired[fireKey{p.Name, store.UnixNanos(p.FireTime)}]; ok {
			return store.FireResult{}, nil
		}
	}
	var res store.FireResult
	if p.Buffer > 0 {
		var last job.State
		if e := s.jobs.get(sc.LastJobID); e != nil {
			last = e.state
		}
		switch store.ApplyBuffer(sc, last, p) {
		case store.BufferAppend:
			return store.FireResult{Buffered: true, Busy: last}, nil
		case store.BufferSkip:
			if !outside {
				sc.SkippedTicks++
				sc.LastSkipAt = p.FireTime
			}
			return store.FireResult{Skipped: true, Busy: last}, nil
		}
	}
	if last := s.jobs.get(sc.LastJobID); p.SkipIfBusy && last != nil {
		switch last.state {
		case job.StateAvailable, job.StateRunning:
			if !outside {
				sc.SkippedTicks++
				sc.LastSkipAt = p.FireTime
			}
			return store.FireResult{Skipped: true, Busy: last.state}, nil
		case job.StateRetrying:
			var v job.Job
			last.view(&v)
			if err := store.ApplySupersede(&v, p.Now, p.FireTime); err != nil {
				return store.FireResult{}, err
			}
			s.update(last, &v)
			res.Superseded = last.id
		}
	}
	j := *p.Job
	j.Schedule, j.FireTime = p.Name, p.FireTime
	if p.Manual {
		j.FireTime = time.Time{}
	}
	e := s.insert(&j)
	sc.LastJobID = e.id
	if !outside {
		sc.LastFireAt = p.FireTime
		sc.SkippedTicks, sc.LastSkipAt = 0, time.Time{}
	}
	res.Fired, res.ID = true, e.id
	return res, nil
}

// release applies store.ApplyRelease to sc: it fires the first buffered
// run when the last job has finished.
func (s *Store) release(sc *job.Schedule, p store.FireScheduleParams) store.FireResult {
	var last job.State
	if e := s.jobs.get(sc.LastJobID); e != nil {
		last = e.state
	}
	if !store.ApplyRelease(sc, last, p) {
		if last != 0 && !last.Finished() {
			return store.FireResult{Busy: last}
		}
		return store.FireResult{}
	}
	if !p.FireTime.IsZero() {
		if _, ok := s.fired[fireKey{p.Name, store.UnixNanos(p.FireTime)}]; ok {
			return store.FireResult{}
		}
	}
	j := *p.Job
	j.Schedule, j.FireTime = p.Name, p.FireTime
	e := s.insert(&j)
	sc.LastJobID = e.id
	if !p.FireTime.IsZero() {
		sc.LastFireAt = p.FireTime
	}
	return store.FireResult{Fired: true, ID: e.id}
}
