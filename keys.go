package hopper

import (
	"context"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// KeyInfo is the flow-control state of one key (EnqueueOptions.Key) of a
// queue, shared by every process on the store. Only keys with a state —
// slots held, a pause, a hold, or a throttle state (a start within about
// two periods of its queue's KeyRate) — are listed.
type KeyInfo struct {
	Queue, Key string
	// Running is how many running jobs of the key hold a slot of the
	// queue's limit per key (SetQueueKeyConcurrency).
	Running int
	// Paused is set while the key is paused (PauseKey), since PausedAt.
	Paused   bool
	PausedAt time.Time
	// HeldUntil: the key's jobs start no earlier (HoldKey); zero if not
	// held.
	HeldUntil time.Time
	// ThrottledUntil is, while the key's throttle (SetQueueKeyRate)
	// allows no start, when it next allows one; zero otherwise.
	ThrottledUntil time.Time
}

// SetQueueKeyConcurrency caps how many jobs of one key (EnqueueOptions.Key)
// of a queue run at once, across every process sharing the store (n = 0
// removes the cap). The claim checks it inside its transaction: a worker
// is never handed a job of a key at its limit, and the queue serves its
// keys in turn, so one key's backlog does not hold the others back. A
// job's attempt holds its key's slot until it ends or is rescued. Jobs
// without a key are not limited. n outside 0 to store.MaxConcurrency is a
// *FieldError on "key_concurrency"; a store without per-key state fails
// with ErrNoFlowControl.
func (c *Client) SetQueueKeyConcurrency(ctx context.Context, queue string, n int) error {
	if _, err := c.keyControl(); err != nil {
		return err
	}
	return c.setQueue(ctx, store.SetQueueParams{Name: queue, KeyConcurrency: &n})
}

// SetQueueKeyRate throttles the starts of each key (EnqueueOptions.Key)
// of a queue, across every process sharing the store: at most r.N per
// r.Period of one key, up to r.Burst at once, by GCRA as SetQueueRate
// does for the whole queue — each key with a state of its own, one small
// row while it starts jobs, deleted about two periods after its last
// start. The claim checks it inside its transaction, at the store's time
// (on PostgreSQL the database's clock): a throttled key is skipped as a key
// at its limit is, its excess waits, its other keys go on, and the workers
// claim again when it next allows a start.
//
// With r.Drop a key's excess is dropped instead: a job of the key that a
// claim would start but for the key's rate — its turn came, its key is
// neither paused, held nor at its limit, the queue neither paused nor at
// its limit, and a worker was free for it — is cancelled with the
// LastError "dropped: key KEY of queue NAME over its rate N/PERIOD", never
// run (an EventCancelled reports it). A claim drops at most as many jobs
// of a key as it could have started of it, and the workers claim again at
// once. Jobs that wait for anything else are not dropped.
//
// Jobs without a key are not throttled by it; a queue's own rate, its
// limits and a key's limit apply as well. The zero Rate removes it (and
// every key's state). A bad rate is a *FieldError on "key_rate" or
// "key_burst"; a store without per-key state fails with
// ErrNoFlowControl.
func (c *Client) SetQueueKeyRate(ctx context.Context, queue string, r Rate) error {
	if _, err := c.keyControl(); err != nil {
		return err
	}
	sr := r.store()
	return c.setQueue(ctx, store.SetQueueParams{Name: queue, KeyRate: &sr})
}

// PauseKey pauses one key of a queue, for every process sharing the store:
// from the next claim of each, no job of the key in the queue starts;
// running ones finish; the queue's other keys go on. The pause survives
// restarts until ResumeKey. A bad queue name or an empty key is a
// *FieldError.
func (c *Client) PauseKey(ctx context.Context, queue, key string) error {
	paused := true
	return c.setKey(ctx, store.SetKeyParams{Queue: queue, Key: key, Paused: &paused})
}

// ResumeKey lets a paused key's jobs start again, waking the workers of
// every process. Resuming a key that is not paused does nothing.
func (c *Client) ResumeKey(ctx context.Context, queue, key string) error {
	paused := false
	return c.setKey(ctx, store.SetKeyParams{Queue: queue, Key: key, Paused: &paused})
}

// HoldQueueKey holds one key of a queue until the client's now plus d: no
// job of the key starts before (a handler holds its own job's key by
// returning HoldKey). A hold only grows; d <= 0 releases it.
func (c *Client) HoldQueueKey(ctx context.Context, queue, key string, d time.Duration) error {
	var until time.Time
	if d > 0 {
		until = c.now().Add(d)
	}
	return c.setKey(ctx, store.SetKeyParams{Queue: queue, Key: key, HoldUntil: &until})
}

// Keys lists the keys of queue (of every queue if "") that have a state,
// by queue and key.
func (c *Client) Keys(ctx context.Context, queue string) ([]KeyInfo, error) {
	kc, err := c.keyControl()
	if err != nil {
		return nil, err
	}
	ks, err := kc.ListKeys(ctx, queue)
	if err != nil {
		return nil, err
	}
	out := make([]KeyInfo, len(ks))
	now := c.now()
	for i, k := range ks {
		out[i] = keyInfo(k, now)
	}
	return out, nil
}

// Key returns the state of key of queue, as Keys lists it (with no state:
// only Queue and Key set), reading that key alone: a queue may have
// 100,000 keys with a state. A queue or key name the stores would refuse
// is a *FieldError naming it.
func (c *Client) Key(ctx context.Context, queue, key string) (KeyInfo, error) {
	if err := job.CheckName("queue", queue); err != nil {
		return KeyInfo{}, err
	}
	if err := job.CheckKey("key", key); err != nil {
		return KeyInfo{}, err
	}
	k, err := c.keyState(ctx, queue, key)
	if err != nil {
		return KeyInfo{}, err
	}
	return keyInfo(k, c.now()), nil
}

// keyInfo is k's KeyInfo at now.
func keyInfo(k store.KeyState, now time.Time) KeyInfo {
	return KeyInfo{Queue: k.Queue, Key: k.Key, Running: k.Running, Paused: k.Paused, PausedAt: k.PausedAt, HeldUntil: k.HeldUntil,
		ThrottledUntil: k.Throttle.Until(now)}
}

// keyState reads the state of key of queue: by the store's GetKey
// (store.KeyGetter), or else found in its ListKeys.
func (c *Client) keyState(ctx context.Context, queue, key string) (store.KeyState, error) {
	kc, err := c.keyControl()
	if err != nil {
		return store.KeyState{}, err
	}
	if g, ok := kc.(store.KeyGetter); ok {
		return g.GetKey(ctx, queue, key)
	}
	ks, err := kc.ListKeys(ctx, queue)
	if err != nil {
		return store.KeyState{}, err
	}
	for _, k := range ks {
		if k.Key == key {
			return k, nil
		}
	}
	return store.KeyState{Queue: queue, Key: key}, nil
}

// setKey applies p at the client's now and wakes this client's workers.
func (c *Client) setKey(ctx context.Context, p store.SetKeyParams) error {
	if c.closed() {
		return ErrClientStopped
	}
	kc, err := c.keyControl()
	if err != nil {
		return err
	}
	p.Now = c.now()
	if _, err := kc.SetKey(ctx, p); err != nil {
		return err
	}
	c.engine.Notify()
	return nil
}

// keyControl returns the store's store.KeyControl.
func (c *Client) keyControl() (store.KeyControl, error) {
	if c.kc == nil {
		return nil, ErrNoFlowControl
	}
	return c.kc, nil
}

// keyWaitReason is WaitReason for j's key, in a queue whose limit per key
// is limit.
func (c *Client) keyWaitReason(ctx context.Context, j *Job, limit int) (string, error) {
	if j.Key == "" || c.kc == nil {
		return "", nil
	}
	k, err := c.keyState(ctx, j.Queue, j.Key)
	if err != nil {
		return "", err
	}
	return store.KeyWaitReason(k, limit, c.now()), nil
}
