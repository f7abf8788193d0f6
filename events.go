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
// EventCancelled of the attempt it stopped).
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

// fence keeps each job's events in the order of its transitions when the
// client reports one transition and a goroutine of the engine the next:
// the store commits a transition before its caller reports it, and
// another goroutine may make the job's next transition and report it in
// between. So the client's own calls that report events hold a ticket
// from before their store call until they have reported, and the engine's
// reports first wait for the tickets taken before them. Two fences, so
// that each report waits only for the calls it may follow:
//
//   - Client.starts: Enqueue, Reschedule, RetryDead and RetryMatching (a
//     job made due may be claimed at once), before the report of a start
//     (EventStarted);
//   - Client.stops: Cancel and CancelMatching (a running job asked to stop
//     may stop at once, or fail, or its worker die), before the reports of
//     an attempt's end and of a rescue (EventCancelRequested before the
//     EventCancelled or EventCompleted that follows it).
//
// Tickets are per call, never held while waiting, so an OnEvent hook that
// enqueues or cancels cannot deadlock. Waiting costs an atomic load while
// no ticket is held.
type fence struct {
	held     atomic.Int64 // tickets not yet released: wait's fast path
	mu       sync.Mutex
	cond     sync.Cond
	next     uint64              // the next ticket
	inflight map[uint64]struct{} // tickets not yet released
}

func (f *fence) enter() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.inflight == nil {
		f.inflight = make(map[uint64]struct{})
		f.cond.L = &f.mu
	}
	t := f.next
	f.next++
	f.inflight[t] = struct{}{}
	f.held.Add(1)
	return t
}

func (f *fence) leave(t uint64) {
	f.mu.Lock()
	delete(f.inflight, t)
	f.held.Add(-1)
	f.mu.Unlock()
	f.cond.Broadcast()
}

// wait returns once every ticket taken before the call is released.
func (f *fence) wait() {
	if f.held.Load() == 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	before := f.next
	for f.older(before) {
		f.cond.Wait()
	}
}

func (f *fence) older(than uint64) bool {
	for t := range f.inflight {
		if t < than {
			return true
		}
	}
	return false
}
