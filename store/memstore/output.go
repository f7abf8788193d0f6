package memstore

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// kept is an attempt's output as the store keeps it: packed (compressed),
// with what retention and Outputs need.
type kept struct {
	attempt   int
	schedule  string
	succeeded bool
	finished  int64
	p         *store.PackedOutput
}

// keepOutput records the output of the attempt o finished on e, which
// reached state: it replaces an earlier run's of the same attempt number.
func (s *Store) keepOutput(e *entry, o store.Outcome, reached job.State, now time.Time) {
	if s.outputs == nil {
		s.outputs = make(map[job.ID][]kept)
	}
	k := kept{attempt: o.Attempt, schedule: e.opt().schedule, succeeded: reached == job.StateCompleted,
		finished: store.UnixNanos(now), p: clonePacked(o.Output)}
	list := s.outputs[e.id]
	i, found := slices.BinarySearchFunc(list, k.attempt, func(k kept, att int) int { return cmp.Compare(k.attempt, att) })
	if found {
		list[i] = k
	} else {
		list = slices.Insert(list, i, k)
	}
	s.outputs[e.id] = list
}

// clonePacked copies p: the store holds no reference to its caller's.
func clonePacked(p *store.PackedOutput) *store.PackedOutput {
	c := *p
	c.Stdout, c.Stderr, c.Log = clone(p.Stdout), clone(p.Stderr), clone(p.Log)
	return &c
}

// Outputs implements store.Store.
func (s *Store) Outputs(ctx context.Context, p store.OutputsParams) ([]*job.Output, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	list := slices.Clone(s.outputs[p.ID])
	s.mu.Unlock()
	out := make([]*job.Output, 0, len(list))
	for _, k := range list {
		if p.Attempt > 0 && k.attempt != p.Attempt {
			continue
		}
		o, err := k.p.Unpack(p.ID, k.attempt)
		if err != nil {
			return nil, err
		}
		o.Schedule, o.Succeeded, o.FinishedAt = k.schedule, k.succeeded, store.FromUnixNanos(k.finished)
		out = append(out, o)
	}
	return out, nil
}

// PruneOutputs implements store.Store. It scans every job's outputs.
func (s *Store) PruneOutputs(ctx context.Context, p store.PruneOutputsParams) (int, error) {
	if err := p.Validate(); err != nil {
		return 0, err
	}
	if err := s.lock(); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	type ref struct {
		id job.ID
		k  kept
	}
	var refs []ref
	for id, list := range s.outputs {
		for _, k := range list {
			if k.schedule == p.Schedule {
				refs = append(refs, ref{id, k})
			}
		}
	}
	// Newest first: by finish time, then job ID and attempt.
	slices.SortFunc(refs, func(a, b ref) int {
		return cmp.Or(cmp.Compare(b.k.finished, a.k.finished), cmp.Compare(b.id, a.id), cmp.Compare(b.k.attempt, a.k.attempt))
	})
	cutoff := int64(0)
	if p.Keep.MaxAge > 0 {
		cutoff = store.UnixNanos(p.Now.Add(-p.Keep.MaxAge))
	}
	n, ok, failed := 0, 0, 0
	for _, r := range refs {
		var drop bool
		if r.k.succeeded {
			ok++
			drop = ok > p.Keep.Succeeded
		} else {
			failed++
			drop = failed > p.Keep.Failed
		}
		if !drop && r.k.finished >= cutoff {
			continue
		}
		list := s.outputs[r.id]
		list = slices.DeleteFunc(list, func(k kept) bool { return k.attempt == r.k.attempt })
		if len(list) == 0 {
			delete(s.outputs, r.id)
		} else {
			s.outputs[r.id] = list
		}
		n++
	}
	return n, nil
}
