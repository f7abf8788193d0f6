package memstore

import (
	"context"
	"slices"
	"strings"

	"github.com/hopperq/hopper/job"
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
	s.rekey(p.Name)
	s.paused, s.limited = 0, 0
	for _, q := range s.queues {
		if q.Paused {
			s.paused++
		}
		if q.Concurrency > 0 {
			s.limited++
		}
	}
	return s.withRunning(q), nil
}

// ListQueues implements store.QueueControl.
func (s *Store) ListQueues(ctx context.Context) ([]store.QueueState, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := make([]store.QueueState, 0, len(s.queues))
	for _, q := range s.queues {
		out = append(out, s.withRunning(q))
	}
	slices.SortFunc(out, func(a, b store.QueueState) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// held reports whether a claim may take no job of queue: it is paused.
func (s *Store) held(queue string) bool {
	return s.paused > 0 && s.queues[queue].Paused
}

// withRunning returns q with Running set, for a queue with a limit: its
// running jobs, from the lanes' counts, which every transition keeps.
func (s *Store) withRunning(q store.QueueState) store.QueueState {
	if q.Concurrency > 0 {
		q.Running = s.runningIn(q.Name)
	}
	return q
}

// runningIn counts the running jobs of queue from its lanes' counts.
func (s *Store) runningIn(queue string) int {
	n := 0
	for _, l := range s.llist {
		if l.queue == queue {
			n += l.counts[job.StateRunning]
		}
	}
	return n
}

// slots returns, for a claim, the free slots of each queue with a limit
// (Concurrency less its running jobs, at least 0), merged into the claim's
// own QueueLimits (the lower of both); nil when no queue has a limit and
// the claim has no QueueLimits.
func (s *Store) slots(limits map[string]int) map[string]int {
	if s.limited == 0 {
		return limits
	}
	out := s.slotBuf // reused: claims run under the lock, one at a time
	if out == nil {
		out = make(map[string]int, len(limits)+s.limited)
		s.slotBuf = out
	}
	clear(out)
	for q, n := range limits {
		out[q] = n
	}
	for _, q := range s.queues {
		if q.Concurrency == 0 {
			continue
		}
		free := max(q.Concurrency-s.runningIn(q.Name), 0)
		if n, ok := out[q.Name]; !ok || free < n {
			out[q.Name] = free
		}
	}
	return out
}
