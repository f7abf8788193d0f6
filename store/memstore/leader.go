package memstore

import (
	"context"

	"github.com/hopperq/hopper/store"
)

var _ store.Leader = (*Store)(nil)

// lease is the record of one led name.
type lease struct {
	holder string
	term   int64
	until  int64
}

// Lead implements store.Leader: several clients sharing a memory store in
// one process elect one of them to run maintenance, as processes sharing a
// durable store do.
func (s *Store) Lead(ctx context.Context, p store.LeadParams) (store.LeadResult, error) {
	if err := s.lock(); err != nil {
		return store.LeadResult{}, err
	}
	defer s.mu.Unlock()
	if s.leases == nil {
		s.leases = make(map[string]*lease)
	}
	now, until := store.UnixNanos(p.Now), store.UnixNanos(p.Now.Add(p.TTL))
	l := s.leases[p.Name]
	switch {
	case l == nil:
		l = &lease{holder: p.Holder, term: 1, until: until}
		s.leases[p.Name] = l
	case l.holder == p.Holder && l.until > now:
		l.until = until
	case l.until <= now:
		l.holder, l.term, l.until = p.Holder, l.term+1, until
	}
	return store.LeadResult{Leader: l.holder == p.Holder, Holder: l.holder, Term: l.term, Until: store.FromUnixNanos(l.until)}, nil
}

// Resign implements store.Leader.
func (s *Store) Resign(ctx context.Context, p store.LeadParams) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if l := s.leases[p.Name]; l != nil && l.holder == p.Holder && l.term == p.Term {
		l.until = 0
	}
	return nil
}
