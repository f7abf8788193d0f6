package memstore

import (
	"context"
	"slices"
	"strings"

	"github.com/hopperq/hopper/store"
)

var _ store.QueueControl = (*Store)(nil)

// SetQueue implements store.QueueControl.
func (s *Store) SetQueue(ctx context.Context, p store.SetQueueParams) (store.QueueState, error) {
	if err := p.Validate(); err != nil {
		return store.QueueState{}, err
	}
	if err := s.lock(); err != nil {
		return store.QueueState{}, err
	}
	defer s.mu.Unlock()
	q := store.ApplySetQueue(s.queues[p.Name], p)
	if q.Zero() {
		delete(s.queues, p.Name)
	} else {
		if s.queues == nil {
			s.queues = make(map[string]store.QueueState)
		}
		s.queues[p.Name] = q
	}
	s.paused = 0
	for _, q := range s.queues {
		if q.Paused {
			s.paused++
		}
	}
	return q, nil
}

// ListQueues implements store.QueueControl.
func (s *Store) ListQueues(ctx context.Context) ([]store.QueueState, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := make([]store.QueueState, 0, len(s.queues))
	for _, q := range s.queues {
		out = append(out, q)
	}
	slices.SortFunc(out, func(a, b store.QueueState) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// held reports whether a claim may take no job of queue: it is paused.
func (s *Store) held(queue string) bool {
	return s.paused > 0 && s.queues[queue].Paused
}
