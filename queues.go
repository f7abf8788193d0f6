package hopper

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/hopperq/hopper/store"
)

// ErrNoFlowControl is returned by the queue flow-control methods
// (PauseQueue, ResumeQueue, SetQueueConcurrency, SetQueueRate,
// SetQueueKeyRate) on a store that does not
// keep queue state (store.QueueControl): every store of this module keeps
// it.
var ErrNoFlowControl = errors.New("the store does not keep queue state (store.QueueControl)")

// QueueInfo describes one queue: its flow-control state, shared by every
// process on the store, and its jobs.
type QueueInfo struct {
	Name string
	// Paused is set while the queue is paused (PauseQueue): its running
	// jobs finish, no job of it starts, in any process sharing the store,
	// until ResumeQueue. PausedAt is when it was paused.
	Paused   bool
	PausedAt time.Time
	// Concurrency caps the queue's running jobs across every process
	// sharing the store (SetQueueConcurrency; 0: no limit). Slots is how
	// many running jobs count against it now.
	Concurrency int
	Slots       int
	// KeyConcurrency caps how many jobs of one key (EnqueueOptions.Key)
	// run at once, across every process (SetQueueKeyConcurrency; 0: no
	// limit).
	KeyConcurrency int
	// Rate throttles the queue's starts across every process sharing the
	// store (SetQueueRate; the zero Rate: none). ThrottledUntil is, while
	// the throttle allows no start, when it next allows one (zero
	// otherwise).
	Rate           Rate
	ThrottledUntil time.Time
	// KeyRate throttles the starts of each key of the queue across every
	// process (SetQueueKeyRate; the zero Rate: none); with KeyRate.Drop
	// each key's excess is dropped rather than held. Keys' throttles are
	// listed by Client.Keys.
	KeyRate Rate
	// Counts are the queue's jobs by state (Stats); QueueStates leaves
	// them out.
	Counts map[State]int
	// Held counts the jobs ready to run that wait because of the queue's
	// state: its available jobs while it is paused, at its limit or
	// throttled, 0 otherwise (QueueStates leaves it out). Throttled counts
	// those its throttle holds: its available jobs while it is throttled
	// and neither paused nor at its limit.
	Held      int
	Throttled int
	// KeyHeld counts the jobs ready to run that their keys hold back
	// (a key paused, held, at the queue's limit per key, or throttled:
	// the rule of store.KeyBlocked), in a queue that does not hold them
	// itself (Held counts those); QueueStates leaves it out.
	KeyHeld int
	// MaxWorkers is this client's own cap on the queue's running jobs
	// (QueueConfig.MaxWorkers; 0: none), which other processes do not
	// share.
	MaxWorkers int
}

// AtLimit reports whether q has a concurrency limit that its running jobs
// reach: its ready jobs wait for a slot.
func (q QueueInfo) AtLimit() bool { return q.Concurrency > 0 && q.Slots >= q.Concurrency }

// IsThrottled reports whether q's throttle allows no start now: its
// ready jobs wait until ThrottledUntil.
func (q QueueInfo) IsThrottled() bool { return !q.ThrottledUntil.IsZero() }

// WaitReason says why q's ready jobs do not start, in words for people
// ("queue mail paused", "queue mail at its limit of 5", "queue mail
// throttled until 12:00:03"), or "" if nothing holds them.
func (q QueueInfo) WaitReason() string {
	switch {
	case q.Paused:
		return fmt.Sprintf("queue %s paused", q.Name)
	case q.AtLimit():
		return fmt.Sprintf("queue %s at its limit of %d", q.Name, q.Concurrency)
	case q.IsThrottled():
		return fmt.Sprintf("queue %s throttled until %s", q.Name, store.ClockTime(q.ThrottledUntil))
	}
	return ""
}

// QueueStates returns the flow-control state of every queue that has one
// (paused, or a concurrency limit), by name, without counting jobs (Queues
// does): one read of the store's small table of queue states. Counts and
// Held are left out.
func (c *Client) QueueStates(ctx context.Context) ([]QueueInfo, error) {
	if c.qc == nil {
		return nil, nil
	}
	states, err := c.qc.ListQueues(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]QueueInfo, len(states))
	for i, s := range states {
		out[i] = QueueInfo{Name: s.Name, Paused: s.Paused, PausedAt: s.PausedAt, Concurrency: s.Concurrency,
			Slots: s.Running, KeyConcurrency: s.KeyConcurrency, MaxWorkers: c.cfg.Queues[s.Name].MaxWorkers,
			Rate: rateOf(s.Rate), KeyRate: rateOf(s.KeyRate)}
		if !s.Rate.Drop {
			out[i].ThrottledUntil = s.Throttle().Until(c.now())
		}
	}
	return out, nil
}

// Queues lists every queue that has jobs, a flow-control state (paused, a
// limit) or a QueueConfig in this client, ordered by name.
func (c *Client) Queues(ctx context.Context) ([]QueueInfo, error) {
	st, err := c.store.Stats(ctx, store.StatsParams{Now: c.now()})
	if err != nil {
		return nil, err
	}
	states, err := c.QueueStates(ctx)
	if err != nil {
		return nil, err
	}
	byName := make(map[string]*QueueInfo)
	get := func(name string) *QueueInfo {
		q := byName[name]
		if q == nil {
			q = &QueueInfo{Name: name, Counts: map[State]int{}}
			byName[name] = q
		}
		return q
	}
	for _, s := range states {
		q := get(s.Name)
		*q = s
		q.Counts = map[State]int{}
	}
	for name, counts := range st.ByQueue {
		q := get(name)
		for s, n := range counts {
			if n > 0 {
				q.Counts[s] = n
			}
		}
	}
	for name, qc := range c.cfg.Queues {
		get(name).MaxWorkers = qc.MaxWorkers
	}
	for _, q := range byName {
		if q.Paused || q.AtLimit() || q.IsThrottled() {
			q.Held = q.Counts[StateAvailable]
		}
		if !q.Paused && !q.AtLimit() && q.IsThrottled() {
			q.Throttled = q.Counts[StateAvailable]
		}
	}
	if slices.ContainsFunc(slices.Collect(maps.Values(byName)), func(q *QueueInfo) bool {
		return q.Held == 0 && q.Counts[StateAvailable] > 0
	}) { // else no ready job waits for its key: no need to ask
		held, err := c.keyHeld(ctx, byName)
		if err != nil {
			return nil, err
		}
		for name, n := range held {
			if q := byName[name]; q != nil {
				q.KeyHeld = n
			}
		}
	}
	out := make([]QueueInfo, 0, len(byName))
	for _, q := range byName {
		out = append(out, *q)
	}
	slices.SortFunc(out, func(a, b QueueInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// KeyHeld returns, per queue that does not hold its ready jobs itself (not
// paused, at its limit or throttled), how many of them their keys hold
// back: a key paused, held, at the queue's limit per key or throttled
// (QueueInfo.KeyHeld, which Queues fills in). Queues with none are left
// out. It reads the keys that have both a state and available jobs
// (store.KeyJobCounter), not every key.
func (c *Client) KeyHeld(ctx context.Context) (map[string]int, error) {
	states, err := c.QueueStates(ctx)
	if err != nil {
		return nil, err
	}
	qs := make(map[string]*QueueInfo, len(states))
	for i := range states {
		qs[states[i].Name] = &states[i]
	}
	return c.keyHeld(ctx, qs)
}

// keyHeld is KeyHeld with the queues' states qs (a queue without one has
// no limit per key and holds nothing itself).
func (c *Client) keyHeld(ctx context.Context, qs map[string]*QueueInfo) (map[string]int, error) {
	out := map[string]int{}
	counter, ok := c.kc.(store.KeyJobCounter)
	if !ok {
		return out, nil
	}
	ks, err := counter.KeysWithJobs(ctx)
	if err != nil {
		return nil, err
	}
	now := c.now()
	for _, k := range ks {
		limit := 0
		if q := qs[k.Queue]; q != nil {
			if q.Paused || q.AtLimit() || q.IsThrottled() {
				continue
			}
			limit = q.KeyConcurrency
		}
		if store.KeyBlocked(k.KeyState, limit, now) != "" {
			out[k.Queue] += k.Available
		}
	}
	return out, nil
}

// PauseQueue pauses a queue in the store, for every process sharing it:
// from the next claim of each, no job of the queue starts; running jobs
// finish. The pause survives restarts until ResumeQueue. Pausing a paused
// queue does nothing. A bad name is a *FieldError; a store without queue
// state fails with ErrNoFlowControl.
func (c *Client) PauseQueue(ctx context.Context, name string) error {
	paused := true
	return c.setQueue(ctx, store.SetQueueParams{Name: name, Paused: &paused})
}

// ResumeQueue lets a paused queue's jobs start again, in every process
// sharing the store: their workers are woken at once (this client's
// directly, other processes' through the store's wake-up, store.Waker).
// Resuming a queue that is not paused does nothing.
func (c *Client) ResumeQueue(ctx context.Context, name string) error {
	paused := false
	return c.setQueue(ctx, store.SetQueueParams{Name: name, Paused: &paused})
}

// SetQueueConcurrency caps how many jobs of a queue run at once across
// every process sharing the store (n = 0 removes the cap). Each claim
// takes at most the queue's free slots, counted by the store in the same
// transaction as every start and end of an attempt; a rescued attempt
// gives its slot back. QueueConfig.MaxWorkers still caps the queue in each
// process. A limit lowered below the running jobs stops new starts until
// they fall under it; running jobs are not stopped. n outside 0 to
// store.MaxConcurrency is a *FieldError on "concurrency".
func (c *Client) SetQueueConcurrency(ctx context.Context, name string, n int) error {
	return c.setQueue(ctx, store.SetQueueParams{Name: name, Concurrency: &n})
}

// SetQueueRate throttles a queue's starts across every process sharing
// the store: at most r.N per r.Period, up to r.Burst at once, by GCRA
// (exact over any sliding window: never more than Burst + w/(Period/N)
// starts in a window of length w). Each claim takes at most the starts
// the throttle allows, in its transaction, at the store's time (on
// PostgreSQL the database's clock, as leases: skewed host clocks change
// nothing). The excess waits, available, and the workers claim again when
// the throttle next allows a start — or, with r.Drop, is dropped:
// cancelled with the LastError "dropped: queue NAME over its rate N/PERIOD",
// never run. On a keyed queue (SetQueueKeyConcurrency, SetQueueKeyRate) a
// claim walks the keys in turn as if the rate did not bind and drops
// what the walk comes to past the rate's starts; a job its key's own
// dropping rate drops keeps the key's reason, and keys that wait for
// anything else (a pause, a hold, their limit) drop nothing. The zero
// Rate removes the throttle. A bad rate is a
// *FieldError on "rate" or "burst"; a store without queue state fails
// with ErrNoFlowControl.
func (c *Client) SetQueueRate(ctx context.Context, name string, r Rate) error {
	sr := r.store()
	return c.setQueue(ctx, store.SetQueueParams{Name: name, Rate: &sr})
}

// setQueue applies p at the client's now and wakes this client's workers:
// held jobs may start.
func (c *Client) setQueue(ctx context.Context, p store.SetQueueParams) error {
	if c.closed() {
		return ErrClientStopped
	}
	qc, err := c.queueControl()
	if err != nil {
		return err
	}
	p.Now = c.now()
	if _, err := qc.SetQueue(ctx, p); err != nil {
		return err
	}
	c.engine.Notify()
	return nil
}

// queueControl returns the store's store.QueueControl.
func (c *Client) queueControl() (store.QueueControl, error) {
	if c.qc == nil {
		return nil, ErrNoFlowControl
	}
	return c.qc, nil
}

// WaitReason says why the waiting job j does not start although its run-at
// has come, in words for people ("queue emails paused", "queue emails at
// its limit of 5", "queue emails throttled until 12:00:03" — the time in
// UTC, "key tenant=42 at its limit of 2", "key tenant=42 paused", "key
// tenant=42 held until 2026-01-02T15:04:05Z", "key tenant=42 throttled
// until 12:00:03"), or "" if nothing holds it:
// it waits only for a worker, or for its run-at. A job that is not waiting
// gives "".
func (c *Client) WaitReason(ctx context.Context, j *Job) (string, error) {
	if j == nil || !j.State.Waiting() || c.qc == nil {
		return "", nil
	}
	states, err := c.QueueStates(ctx)
	if err != nil {
		return "", err
	}
	var keyLimit int
	for _, q := range states {
		if q.Name == j.Queue {
			if r := q.WaitReason(); r != "" {
				return r, nil
			}
			keyLimit = q.KeyConcurrency
		}
	}
	return c.keyWaitReason(ctx, j, keyLimit)
}
