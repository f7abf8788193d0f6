package memstore

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// memCheck is a check and its ping log, oldest first.
type memCheck struct {
	c     *job.Check
	pings []*job.Ping
}

func checkNotFound(name string) error { return fmt.Errorf("check %q: %w", name, job.ErrNotFound) }

// AddCheck implements store.Store.
func (s *Store) AddCheck(ctx context.Context, c *job.Check) error {
	if err := c.Check(); err != nil {
		return err
	}
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	for _, m := range s.checks {
		if m.c.Name == c.Name || m.c.PingID == c.PingID {
			return fmt.Errorf("check %q: %w", c.Name, job.ErrDuplicate)
		}
	}
	c.CreatedAt = store.FromUnixNanos(store.UnixNanos(c.CreatedAt))
	c.LastPingAt = store.FromUnixNanos(store.UnixNanos(c.LastPingAt))
	s.checks[c.Name] = &memCheck{c: c.Clone()}
	return nil
}

// GetCheck implements store.Store.
func (s *Store) GetCheck(ctx context.Context, name string) (*job.Check, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	m := s.checks[name]
	if m == nil {
		return nil, checkNotFound(name)
	}
	return m.c.Clone(), nil
}

// ListChecks implements store.Store.
func (s *Store) ListChecks(ctx context.Context) ([]*job.Check, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := make([]*job.Check, 0, len(s.checks))
	for _, m := range s.checks {
		out = append(out, m.c.Clone())
	}
	slices.SortFunc(out, func(a, b *job.Check) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// RemoveCheck implements store.Store.
func (s *Store) RemoveCheck(ctx context.Context, name string) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if s.checks[name] == nil {
		return checkNotFound(name)
	}
	delete(s.checks, name)
	return nil
}

// PauseCheck implements store.Store.
func (s *Store) PauseCheck(ctx context.Context, name string, paused bool) (*job.Check, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	m := s.checks[name]
	if m == nil {
		return nil, checkNotFound(name)
	}
	m.c.SetPaused(paused)
	return m.c.Clone(), nil
}

// PingCheck implements store.Store: a walk over the checks for the ping
// ID.
func (s *Store) PingCheck(ctx context.Context, p store.PingCheckParams) (*job.Check, *job.Ping, error) {
	if err := p.Validate(); err != nil {
		return nil, nil, err
	}
	if err := s.lock(); err != nil {
		return nil, nil, err
	}
	defer s.mu.Unlock()
	for _, m := range s.checks {
		if m.c.PingID != p.PingID {
			continue
		}
		pg := *p.Ping
		pg.At = store.FromUnixNanos(store.UnixNanos(pg.At))
		m.c.Apply(&pg)
		kept := pg
		kept.Armed = false // not stored
		m.pings = append(m.pings, &kept)
		if n := len(m.pings) - p.Keep; n > 0 {
			m.pings = slices.Delete(m.pings, 0, n)
		}
		out := pg
		return m.c.Clone(), &out, nil
	}
	return nil, nil, fmt.Errorf("ping ID: %w", job.ErrNotFound)
}

// ListPings implements store.Store.
func (s *Store) ListPings(ctx context.Context, p store.ListPingsParams) ([]*job.Ping, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := []*job.Ping{}
	m := s.checks[p.Check]
	if m == nil {
		return out, nil
	}
	for i := len(m.pings) - 1; i >= 0 && (p.Limit <= 0 || len(out) < p.Limit); i-- {
		c := *m.pings[i]
		out = append(out, &c)
	}
	return out, nil
}
