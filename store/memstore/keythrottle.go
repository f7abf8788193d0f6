package memstore

import (
	"container/heap"

	"github.com/hopperq/hopper/store"
)

// A queue with a KeyRate (store.QueueControl) keeps each key's throttle
// state — its TAT — in keyTATs: by key for the claim's check, and in a heap
// by TAT, so that each claim collects the keys whose TAT is more than a
// period behind (store.Throttle.Collectable) at the cost of a look at the
// heap's top, and O(log n) for each key it forgets.

// keyTAT is the throttle state of one key: its TAT (Unix nanoseconds) and
// its place in its queue's heap.
type keyTAT struct {
	key string
	tat int64
	i   int
}

// keyTATs are the throttle states of the keys of one queue.
type keyTATs struct {
	by map[string]*keyTAT
	h  tatHeap
}

// tatHeap orders keys by TAT, earliest first (container/heap).
type tatHeap []*keyTAT

func (h tatHeap) Len() int           { return len(h) }
func (h tatHeap) Less(a, b int) bool { return h[a].tat < h[b].tat }
func (h tatHeap) Swap(a, b int)      { h[a], h[b] = h[b], h[a]; h[a].i, h[b].i = a, b }
func (h *tatHeap) Push(x any)        { t := x.(*keyTAT); t.i = len(*h); *h = append(*h, t) }
func (h *tatHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return t
}

// keyThrottle returns the throttle of key of queue under rate, the
// queue's KeyRate (TAT 0 if the key has no state).
func (s *Store) keyThrottle(queue, key string, rate store.Rate) store.Throttle {
	th := store.Throttle{Rate: rate}
	if ks := s.keyTATs[queue]; ks != nil {
		if t := ks.by[key]; t != nil {
			th.TAT = t.tat
		}
	}
	return th
}

// takeKeyThrottle moves the throttle of e's key on by e's start at now,
// if its queue has a KeyRate.
func (s *Store) takeKeyThrottle(e *entry, now int64) {
	rate, key := s.queues[e.l.queue].KeyRate, e.keyOf()
	if rate.Zero() || key == "" {
		return
	}
	ks := s.keyTATs[e.l.queue]
	if ks == nil {
		if s.keyTATs == nil {
			s.keyTATs = make(map[string]*keyTATs)
		}
		ks = &keyTATs{by: make(map[string]*keyTAT)}
		s.keyTATs[e.l.queue] = ks
	}
	t := ks.by[key]
	if t == nil {
		t = &keyTAT{key: key}
		ks.by[key] = t
		heap.Push(&ks.h, t)
	}
	t.tat = store.Throttle{Rate: rate, TAT: t.tat}.Take(now, 1).TAT
	heap.Fix(&ks.h, t.i)
}

// collectKeyThrottles forgets, in every queue with a KeyRate, the keys
// whose throttle state is collectable at now.
func (s *Store) collectKeyThrottles(now int64) {
	for q, ks := range s.keyTATs {
		rate := s.queues[q].KeyRate
		for len(ks.h) > 0 && (store.Throttle{Rate: rate, TAT: ks.h[0].tat}).Collectable(now) {
			delete(ks.by, heap.Pop(&ks.h).(*keyTAT).key)
		}
	}
}

// keyThrottles returns the throttle states of the keys of queue (every
// queue if ""), in no order, each with only Queue, Key and Throttle set.
func (s *Store) keyThrottles(queue string) []store.KeyState {
	var out []store.KeyState
	for q, ks := range s.keyTATs {
		if queue != "" && q != queue {
			continue
		}
		rate := s.queues[q].KeyRate
		for _, t := range ks.h {
			out = append(out, store.KeyState{Queue: q, Key: t.key, Throttle: store.Throttle{Rate: rate, TAT: t.tat}})
		}
	}
	return out
}
