package hopper

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/hopperq/hopper/job"
)

// SubscriptionBuffer is how many events a subscription holds for a slow
// reader; when it is full, further events for that subscriber are dropped
// (and counted by Dropped) rather than slowing the workers down.
const SubscriptionBuffer = 4096

// Subscription is a stream of events. Read C until it is closed (by
// Unsubscribe or the client's Stop).
type Subscription struct {
	C       <-chan Event
	ch      chan Event
	types   []EventType
	dropped atomic.Int64
	b       *broker
}

// Dropped returns how many events were dropped because C was full.
func (s *Subscription) Dropped() int64 { return s.dropped.Load() }

// Unsubscribe stops the stream and closes C. It is safe to call twice.
func (s *Subscription) Unsubscribe() { s.b.remove(s) }

// Subscribe returns a stream of the client's transitions of the given types
// (all types if none is given): every job this client enqueues, starts,
// finishes, cancels, reschedules, rescues or retries from the dead-letter
// queue. Transitions made by other processes sharing a durable store are not
// seen. A job's events arrive in the order of its transitions (its
// EventEnqueued before its EventStarted, even when a worker claims it the
// moment it is stored; a running job's EventCancelRequested before the
// EventCancelled of the attempt it stopped). Workers never wait for events
// to be delivered: a job's EventStarted may arrive after its handler began,
// and when it must follow the EventEnqueued of an enqueue still in flight,
// it is held back, with the events after it, until that is reported.
func (c *Client) Subscribe(types ...EventType) *Subscription {
	return c.events.add(types)
}

// broker fans events out to subscriptions and wakes Wait calls.
type broker struct {
	mu      sync.Mutex
	subs    []*Subscription
	waiters map[job.ID][]chan struct{}
	closed  bool
	n       atomic.Int64 // subscriptions + waiters, read without the lock
}

func newBroker() *broker { return &broker{waiters: make(map[job.ID][]chan struct{})} }

func (b *broker) add(types []EventType) *Subscription {
	ch := make(chan Event, SubscriptionBuffer)
	s := &Subscription{C: ch, ch: ch, types: types, b: b}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		close(ch)
		return s
	}
	b.subs = append(b.subs, s)
	b.n.Add(1)
	return s
}

func (b *broker) remove(s *Subscription) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if i := slices.Index(b.subs, s); i >= 0 {
		b.subs = slices.Delete(b.subs, i, i+1)
		b.n.Add(-1)
		close(s.ch)
	}
}

// wait returns a channel closed at the next event of job id, or nil once
// the broker is closed (no events will come: the caller polls).
func (b *broker) wait(id job.ID) (<-chan struct{}, func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, func() {}
	}
	ch := make(chan struct{})
	b.waiters[id] = append(b.waiters[id], ch)
	b.n.Add(1)
	return ch, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		ws := b.waiters[id]
		if i := slices.Index(ws, ch); i >= 0 {
			b.waiters[id] = slices.Delete(ws, i, i+1)
			if len(b.waiters[id]) == 0 {
				delete(b.waiters, id)
			}
			b.n.Add(-1)
		}
	}
}

// active reports whether anyone listens; publishers may skip building
// events when not.
func (b *broker) active() bool { return b.n.Load() > 0 }

func (b *broker) publish(ev Event) {
	if !b.active() {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, s := range b.subs {
		if len(s.types) > 0 && !slices.Contains(s.types, ev.Type) {
			continue
		}
		select {
		case s.ch <- ev:
		default:
			s.dropped.Add(1)
		}
	}
	if ws := b.waiters[ev.Job.ID]; len(ws) > 0 {
		for _, ch := range ws {
			close(ch)
		}
		delete(b.waiters, ev.Job.ID)
		b.n.Add(-int64(len(ws)))
	}
}

func (b *broker) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	b.closed = true
	for _, s := range b.subs {
		close(s.ch)
	}
	b.subs = nil
	for id, ws := range b.waiters {
		for _, ch := range ws {
			close(ch)
		}
		delete(b.waiters, id)
	}
	b.n.Store(0)
}
