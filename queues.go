package hopper

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hopperq/hopper/store"
)

// ErrNoFlowControl is returned by the queue flow-control methods (PauseQueue,
// ResumeQueue) on a store that does not keep queue state
// (store.QueueControl): every store of this module keeps it.
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
	// Counts are the queue's jobs by state (Stats).
	Counts map[State]int
	// Held counts the jobs ready to run that wait because of the queue's
	// state: its available jobs while it is paused, 0 otherwise.
	Held int
	// MaxWorkers is this client's own cap on the queue's running jobs
	// (QueueConfig.MaxWorkers; 0: none), which other processes do not
	// share.
	MaxWorkers int
}

// queueControl returns the store's store.QueueControl.
func (c *Client) queueControl() (store.QueueControl, error) {
	if c.qc == nil {
		return nil, ErrNoFlowControl
	}
	return c.qc, nil
}

// Queues lists every queue that has jobs, a flow-control state (paused) or
// a QueueConfig in this client, ordered by name.
func (c *Client) Queues(ctx context.Context) ([]QueueInfo, error) {
	st, err := c.store.Stats(ctx, store.StatsParams{Now: c.now()})
	if err != nil {
		return nil, err
	}
	var states []store.QueueState
	if c.qc != nil {
		if states, err = c.qc.ListQueues(ctx); err != nil {
			return nil, err
		}
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
	for _, s := range states {
		q := get(s.Name)
		q.Paused, q.PausedAt = s.Paused, s.PausedAt
	}
	out := make([]QueueInfo, 0, len(byName))
	for _, q := range byName {
		if q.Paused {
			q.Held = q.Counts[StateAvailable]
		}
		out = append(out, *q)
	}
	slices.SortFunc(out, func(a, b QueueInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// PausedQueues returns the names of the paused queues, sorted: one read
// of the small table of queue states, without counting jobs (Queues does),
// for a caller that has the counts already (a metrics scrape).
func (c *Client) PausedQueues(ctx context.Context) ([]string, error) {
	if c.qc == nil {
		return nil, nil
	}
	states, err := c.qc.ListQueues(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, s := range states {
		if s.Paused {
			out = append(out, s.Name)
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
	return c.setPaused(ctx, name, true)
}

// ResumeQueue lets a paused queue's jobs start again, in every process
// sharing the store: their workers are woken at once (this client's
// directly, other processes' through the store's wake-up, store.Waker).
// Resuming a queue that is not paused does nothing.
func (c *Client) ResumeQueue(ctx context.Context, name string) error {
	if err := c.setPaused(ctx, name, false); err != nil {
		return err
	}
	c.engine.Notify()
	return nil
}

func (c *Client) setPaused(ctx context.Context, name string, paused bool) error {
	if c.closed() {
		return ErrClientStopped
	}
	qc, err := c.queueControl()
	if err != nil {
		return err
	}
	_, err = qc.SetQueue(ctx, store.SetQueueParams{Now: c.now(), Name: name, Paused: &paused})
	return err
}

// WaitReason says why the waiting job j does not start although its run-at
// has come, in words for people ("queue emails paused"), or "" if nothing
// holds it: it waits only for a worker, or for its run-at. A job that is
// not waiting gives "".
func (c *Client) WaitReason(ctx context.Context, j *Job) (string, error) {
	if j == nil || !j.State.Waiting() || c.qc == nil {
		return "", nil
	}
	paused, err := c.PausedQueues(ctx)
	if err != nil {
		return "", err
	}
	if slices.Contains(paused, j.Queue) {
		return fmt.Sprintf("queue %s paused", j.Queue), nil
	}
	return "", nil
}
