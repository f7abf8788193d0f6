package store

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/hopperq/hopper/job"
)

// KeyControl is implemented by stores that keep flow-control state per key
// (job.Job.Key) within a queue: a limit per key (QueueState.KeyConcurrency,
// set with SetQueue), a pause of one key, and a hold of one key until a
// time (SetKey, or an Outcome's HoldKeyUntil). Every store of this module
// implements it (docs/flow-control.md, decisions 51 and 52).
//
// The rules, the same on every store, checked by Claim inside its
// transaction (KeyBlocked is the one rule):
//   - a job whose key is paused, or held until after the claim's now, does
//     not start;
//   - in a queue with a KeyConcurrency, a job with a key does not start
//     while that many jobs of its key hold a slot. A job's attempt claimed
//     while its queue had a limit per key holds one slot of its key until
//     the attempt ends (finish) or is rescued, never two;
//   - a queue that has a limit per key, or a paused or held key, is keyed:
//     a claim serves its keys in turn, in key order from the one after the
//     key the queue's previous claim served last (wrapping around), one job
//     of each key a round, each key's jobs in claim order (priority,
//     run-at, ID); the jobs without a key count as the key "", which sorts
//     first and which no key rule applies to.
//
// Each key with a state has one small row (KeyState); a row with no slot
// held, no pause and no hold left is deleted.
type KeyControl interface {
	// SetKey changes the state of key p.Key of queue p.Queue as p says
	// and returns it. Invalid p is a *job.FieldError and changes nothing.
	// A store that tells other processes when jobs may have become
	// available (store.Waker) does so when a key is resumed or released.
	SetKey(ctx context.Context, p SetKeyParams) (KeyState, error)
	// ListKeys returns the state of the keys of queue (every queue if
	// "") that have a row, ordered by queue and key.
	ListKeys(ctx context.Context, queue string) ([]KeyState, error)
}

// KeyState is the flow-control state of one key of one queue.
type KeyState struct {
	Queue, Key string
	// Running is how many running attempts hold a slot of the key.
	Running int
	// Paused is set while the key is paused; PausedAt is when.
	Paused   bool
	PausedAt time.Time
	// HeldUntil: the key's jobs do not start before it (zero: not held).
	HeldUntil time.Time
	UpdatedAt time.Time
}

// Idle reports whether k has nothing left to keep at now: no slot held, no
// pause, no hold in force. Stores delete such rows.
func (k KeyState) Idle(now time.Time) bool {
	return k.Running <= 0 && !k.Paused && !k.HeldUntil.After(now)
}

// SetKeyParams are the arguments of KeyControl.SetKey. Nil fields leave
// the state as it is.
type SetKeyParams struct {
	Now   time.Time
	Queue string
	Key   string
	// Paused pauses (true) or resumes (false) the key.
	Paused *bool
	// HoldUntil holds the key until then (a zero time releases a hold).
	// A hold only grows: a time before the current hold keeps it, but for
	// the zero time.
	HoldUntil *time.Time
}

// Validate returns a *job.FieldError unless p names a queue ("queue") and
// a key ("key") and its hold is a time the stores keep ("hold_until").
func (p SetKeyParams) Validate() error {
	if err := job.CheckName("queue", p.Queue); err != nil {
		return err
	}
	if err := job.CheckKey("key", p.Key); err != nil {
		return err
	}
	if h := p.HoldUntil; h != nil && !h.IsZero() {
		if err := job.CheckTime("hold_until", *h); err != nil {
			return err
		}
	}
	return nil
}

// ApplySetKey applies p to k, the key's current state (zero if it has no
// row), and returns the new state: the rule every store follows.
func ApplySetKey(k KeyState, p SetKeyParams) KeyState {
	k.Queue, k.Key = p.Queue, p.Key
	now := p.Now.UTC()
	if p.Paused != nil && *p.Paused != k.Paused {
		k.Paused = *p.Paused
		k.PausedAt = time.Time{}
		if k.Paused {
			k.PausedAt = now
		}
	}
	if h := p.HoldUntil; h != nil {
		switch {
		case h.IsZero():
			k.HeldUntil = time.Time{}
		case h.After(k.HeldUntil):
			k.HeldUntil = h.UTC()
		}
	}
	k.UpdatedAt = now
	return k
}

// KeyBlocked says why a job of key k (its state) may not start at now in a
// queue whose limit per key is limit (0: none), or "" if it may: "paused",
// "held" or "limit". The key "" is never blocked. Claims, WaitReason and
// the conformance suite all apply this one rule.
func KeyBlocked(k KeyState, limit int, now time.Time) string {
	switch {
	case k.Key == "":
		return ""
	case k.Paused:
		return "paused"
	case k.HeldUntil.After(now):
		return "held"
	case limit > 0 && k.Running >= limit:
		return "limit"
	}
	return ""
}

// KeyWaitReason words KeyBlocked's answer for people: "key tenant=42 at
// its limit of 2", "key tenant=42 paused", "key tenant=42 held until
// 2026-01-02T15:04:05Z"; "" if nothing blocks the key.
func KeyWaitReason(k KeyState, limit int, now time.Time) string {
	switch KeyBlocked(k, limit, now) {
	case "paused":
		return fmt.Sprintf("key %s paused", k.Key)
	case "held":
		return fmt.Sprintf("key %s held until %s", k.Key, k.HeldUntil.UTC().Format(time.RFC3339))
	case "limit":
		return fmt.Sprintf("key %s at its limit of %d", k.Key, limit)
	}
	return ""
}

// NextKey returns, of keys (sorted, distinct), the index of the first one
// after cursor in the turn order KeyControl describes (those after cursor,
// then from the first), for which ok holds; -1 if none does. The empty key
// sorts first like any other.
func NextKey(keys []string, cursor string, ok func(i int) bool) int {
	start, found := slices.BinarySearch(keys, cursor)
	if found {
		start++
	}
	for n := range len(keys) {
		i := (start + n) % len(keys)
		if ok(i) {
			return i
		}
	}
	return -1
}

// KeyWalk is the pick of a SQL store's claim of one keyed queue, over the
// reads it gives: the keys in turn from Cursor (NextKey's order: the keys
// after Cursor, then "", then the keys up to Cursor), those KeyBlocked
// refuses skipped, each key's jobs up to its free slots, one job of each
// key a round, at most N in all. A key's backlog costs one read of its
// first jobs, however long it is.
type KeyWalk struct {
	Cursor string
	Limit  int // the queue's limit per key (0: none)
	Now    time.Time
	N      int
	// Next returns the first key (not "") with available jobs after
	// after, and not after upTo unless upTo is "".
	Next func(after, upTo string) (key string, ok bool, err error)
	// State returns a key's state (the zero state, named, without a row).
	State func(key string) (KeyState, error)
	// Jobs returns the first n available jobs of key, in claim order.
	Jobs func(key string, n int) ([]job.ID, error)
}

// Pick returns the jobs to claim, in turn order, with their keys, and
// whether a key at its limit (with jobs left) held jobs back.
func (w KeyWalk) Pick() (ids []job.ID, keys []string, held bool, err error) {
	type keyJobs struct {
		key string
		ids []job.ID
	}
	var walk []keyJobs
	visit := func(key string) error {
		k, err := w.State(key)
		if err != nil {
			return err
		}
		switch KeyBlocked(k, w.Limit, w.Now) {
		case "":
		case "limit":
			held = true
			return nil
		default:
			return nil
		}
		take := w.N
		capped := w.Limit > 0 && key != "" && w.Limit-k.Running < take
		if capped {
			take = w.Limit - k.Running
		}
		got, err := w.Jobs(key, take)
		if err != nil {
			return err
		}
		if len(got) > 0 {
			walk = append(walk, keyJobs{key, got})
		}
		held = held || capped && len(got) == take // the key may have more, at its limit now
		return nil
	}
	scan := func(from, upTo string) error {
		for key := from; len(walk) < w.N; {
			k, ok, err := w.Next(key, upTo)
			if err != nil || !ok {
				return err
			}
			if err := visit(k); err != nil {
				return err
			}
			key = k
		}
		return nil
	}
	if err := scan(w.Cursor, ""); err != nil {
		return nil, nil, held, err
	}
	if len(walk) < w.N {
		if err := visit(""); err != nil {
			return nil, nil, held, err
		}
	}
	if w.Cursor != "" && len(walk) < w.N {
		if err := scan("", w.Cursor); err != nil {
			return nil, nil, held, err
		}
	}
	for round := 0; len(ids) < w.N; round++ {
		took := false
		for _, kj := range walk {
			if round < len(kj.ids) && len(ids) < w.N {
				ids, keys = append(ids, kj.ids[round]), append(keys, kj.key)
				took = true
			}
		}
		if !took {
			break
		}
	}
	return ids, keys, held, nil
}
