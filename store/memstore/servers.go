package memstore

import (
	"cmp"
	"context"
	"slices"

	"github.com/hopperq/hopper/store"
)

var _ store.Registry = (*Store)(nil)

// RegisterServer implements store.Registry: several clients sharing a
// memory store in one process list one another, as processes sharing a
// durable store do.
func (s *Store) RegisterServer(ctx context.Context, p store.RegisterServerParams) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if s.servers == nil {
		s.servers = make(map[string]store.Server)
	}
	sv := p.Server
	sv.StartedAt = store.FromUnixNanos(store.UnixNanos(sv.StartedAt)) // in UTC, as the durable stores return it
	sv.HeartbeatAt, sv.Running, sv.Leader = store.FromUnixNanos(store.UnixNanos(p.Now)), 0, false
	s.servers[sv.ID] = sv
	return nil
}

// RemoveServer implements store.Registry.
func (s *Store) RemoveServer(ctx context.Context, id string) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	delete(s.servers, id)
	return nil
}

// PruneServers implements store.Registry.
func (s *Store) PruneServers(ctx context.Context, p store.PruneServersParams) (int, error) {
	if err := s.lock(); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	n := 0
	for id, sv := range s.servers {
		if sv.HeartbeatAt.Before(p.Before) {
			delete(s.servers, id)
			n++
		}
	}
	return n, nil
}

// ListServers implements store.Registry. It counts the running jobs by
// worker: O(running jobs).
func (s *Store) ListServers(ctx context.Context, p store.ListServersParams) ([]store.Server, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := make([]store.Server, 0, len(s.servers))
	if len(s.servers) == 0 {
		return out, nil
	}
	running := make(map[string]int)
	for e := range s.running.all {
		running[e.c.worker]++
	}
	var holder string
	if l := s.leases[p.Lease]; l != nil && l.until > store.UnixNanos(p.Now) {
		holder = l.holder
	}
	for _, sv := range s.servers {
		sv.Running, sv.Leader = running[sv.ID], sv.ID == holder
		out = append(out, sv)
	}
	slices.SortFunc(out, func(a, b store.Server) int {
		return cmp.Or(a.StartedAt.Compare(b.StartedAt), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}
