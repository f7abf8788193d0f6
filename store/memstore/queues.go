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
	if q.KeyRate.Zero() {
		delete(s.keyTATs, p.Name)
	}
	s.rekey(p.Name)
	s.paused, s.limited, s.throttled = 0, 0, 0
	for _, q := range s.queues {
		if q.Paused {
			s.paused++
		}
		if q.Concurrency > 0 {
			s.limited++
		}
		if !q.Rate.Zero() {
			s.throttled++
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
	if s.limited == 0 && s.throttled == 0 {
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

// gate is a throttled queue in a claim: the jobs the claim would take from
// it but for its rate (want) and those its rate allows (allow).
type gate struct {
	queue       string
	want, allow int
	// keyedDrop: a keyed queue whose rate drops its excess; the claim
	// takes want of it and split makes the drops (overRate).
	keyedDrop bool
	split     store.RateSplit
}

// throttle caps limits (slots' answer, the store's own map when a queue is
// throttled) with the starts each throttled queue's rate allows at p.Now,
// and records them in s.gates. A keyed queue whose rate drops is capped
// at want instead, the claim splitting its picks (overRate).
func (s *Store) throttle(limits map[string]int, p store.ClaimParams) {
	s.gates = s.gates[:0]
	if s.throttled == 0 {
		return
	}
	now := store.UnixNanos(p.Now)
	for _, q := range s.queues {
		if q.Rate.Zero() || q.Paused {
			continue
		}
		want := p.Limit
		if n, ok := limits[q.Name]; ok {
			want = min(want, n)
		}
		g := gate{queue: q.Name, want: want, allow: q.Throttle().Free(now, want)}
		limits[q.Name] = g.allow
		if q.Rate.Drop && s.keyedLanes(q.Name) {
			g.keyedDrop, g.split.Allowed = true, g.allow
			limits[q.Name] = want
		}
		s.gates = append(s.gates, g)
	}
}

// endThrottle ends a claim's throttling (store.QueueControl): it moves each
// throttled queue's state on by the jobs the claim took from it (taken),
// drops the excess of the queues that drop it, and sets ThrottledUntil for
// those that hold it back.
func (s *Store) endThrottle(ls []*lane, taken map[string]int, p store.ClaimParams, res *store.ClaimResult) error {
	now := store.UnixNanos(p.Now)
	for _, g := range s.gates {
		q := s.queues[g.queue]
		if len(s.keyDrops) > 0 {
			taken[g.queue] -= s.keyDropsIn(g.queue) // starts only
		}
		th := q.Throttle().Take(now, taken[g.queue])
		q.TAT = store.FromUnixNanos(th.TAT)
		s.queues[g.queue] = q
		if g.allow >= g.want || g.keyedDrop { // (a keyed queue's claim dropped its excess)
			continue
		}
		if !q.Rate.Drop {
			if th.Next() > now && s.readyIn(ls, g.queue) {
				if u := store.FromUnixNanos(th.Next()); res.ThrottledUntil.IsZero() || u.Before(res.ThrottledUntil) {
					res.ThrottledUntil = u
				}
			}
			continue
		}
		reason := store.DropReason(g.queue, q.Rate)
		var v job.Job
		for range g.want - g.allow {
			var best *lane
			for _, l := range ls {
				if l.queue == g.queue && l.ready.len() > 0 && (best == nil || best.ready.less(l.ready.head(), best.ready.head())) {
					best = l
				}
			}
			if best == nil {
				break
			}
			e := best.ready.pop()
			e.view(&v)
			if err := store.ApplyDrop(&v, p.Now, reason); err != nil {
				return err // an available job can always be cancelled
			}
			s.update(e, &v)
			j := new(job.Job)
			e.fill(j)
			res.Dropped = append(res.Dropped, j)
		}
	}
	return nil
}

// keyedLanes reports whether queue has keyed lanes (rekey makes them so
// while keyedQueue holds), without keyedQueue's look through every key.
func (s *Store) keyedLanes(queue string) bool {
	for _, l := range s.llist {
		if l.queue == queue && l.keyed {
			return true
		}
	}
	return false
}

// overRate reports whether the claim drops, for its queue's own rate, the
// next job of the keyed queue that its key would start
// (store.RateSplit).
func (s *Store) overRate(queue string) bool {
	for i := range s.gates {
		if g := &s.gates[i]; g.queue == queue && g.keyedDrop {
			return !g.split.Start()
		}
	}
	return false
}

// readyIn reports whether a lane of queue among ls has ready jobs (a
// keyed lane's in its keys' heaps too).
func (s *Store) readyIn(ls []*lane, queue string) bool {
	for _, l := range ls {
		if l.queue == queue && (l.ready.len() > 0 || len(l.keyList) > 0) {
			return true
		}
	}
	return false
}
