package store

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
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
//   - in a queue with a KeyRate (QueueControl), a job with a key does not
//     start while its key's throttle (KeyState.Throttle) allows no start,
//     and a claim takes at most the starts it allows (with the KeyRate's
//     Drop, the jobs it comes to past them are dropped: QueueControl);
//   - a queue that has a limit or a rate per key, or a paused or held key,
//     is keyed:
//     a claim serves its keys in turn, in key order from the one after the
//     key the queue's previous claim served last (wrapping around), one job
//     of each key a round, each key's jobs in claim order (priority,
//     run-at, ID); the jobs without a key count as the key "", which sorts
//     first and which no key rule applies to.
//
// Each key with a state has one small row (KeyState); a row with no slot
// held, no pause and no hold left is deleted. A key's throttle state is a
// row of its own, deleted once Throttle.Collectable.
type KeyControl interface {
	// SetKey changes the state of key p.Key of queue p.Queue as p says
	// and returns it. Invalid p is a *job.FieldError and changes nothing.
	// A store that tells other processes when jobs may have become
	// available (store.Waker) does so when a key is resumed or released.
	SetKey(ctx context.Context, p SetKeyParams) (KeyState, error)
	// ListKeys returns the state of the keys of queue (every queue if
	// "") that have a row — a state or a throttle state — ordered by
	// queue and key.
	ListKeys(ctx context.Context, queue string) ([]KeyState, error)
}

// KeyGetter is implemented by stores that read one key's state without
// listing its queue's keys: every store of this module. A queue may have
// 100,000 keys with a state (each key's throttle is a row), and a reader
// of one key (why a job waits, the reply to a key's pause) should not
// read them all.
type KeyGetter interface {
	// GetKey returns the state of key of queue as ListKeys lists it, its
	// Throttle included, or the zero state with Queue and Key set if the
	// key has none.
	GetKey(ctx context.Context, queue, key string) (KeyState, error)
}

// KeyJobCounter is implemented by stores that count the available jobs of
// the keys with a state: every store of this module. A client counts with
// it the jobs that their keys hold back (hopper.QueueInfo.KeyHeld),
// applying KeyBlocked in Go, so that the rule stays in one place; the
// store reads only the keys that have both a state and available jobs —
// not 100,000 throttle rows of keys with nothing waiting.
type KeyJobCounter interface {
	// KeysWithJobs returns the keys that have a state (as ListKeys lists
	// them, Throttle included) and available jobs, ordered by queue and
	// key, each with how many available jobs it has.
	KeysWithJobs(ctx context.Context) ([]KeyJobs, error)
}

// KeyJobs is a key's state and the number of its available jobs.
type KeyJobs struct {
	KeyState
	Available int
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
	// Throttle is the key's GCRA state under its queue's KeyRate (its
	// Rate is the queue's KeyRate, zero without one; TAT 0 before the
	// key's first start, or once its row was collected). It is kept
	// apart from the rest, which Idle is about.
	Throttle Throttle
}

// Idle reports whether k has nothing left to keep at now: no slot held, no
// pause, no hold in force. Stores delete such rows (its Throttle has a
// rule of its own, Throttle.Collectable).
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
// "held", "limit" or "throttled" (its Throttle allows no start at now).
// The key "" is never blocked. Claims, WaitReason and the conformance
// suite all apply this one rule.
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
	case k.Throttle.Free(UnixNanos(now), 1) == 0:
		return "throttled"
	}
	return ""
}

// KeyWaitReason words KeyBlocked's answer for people: "key tenant=42 at
// its limit of 2", "key tenant=42 paused", "key tenant=42 held until
// 2026-01-02T15:04:05Z", "key tenant=42 throttled until 12:00:03"
// (ClockTime); "" if nothing blocks the key.
func KeyWaitReason(k KeyState, limit int, now time.Time) string {
	switch KeyBlocked(k, limit, now) {
	case "paused":
		return fmt.Sprintf("key %s paused", k.Key)
	case "held":
		return fmt.Sprintf("key %s held until %s", k.Key, k.HeldUntil.UTC().Format(time.RFC3339))
	case "limit":
		return fmt.Sprintf("key %s at its limit of %d", k.Key, limit)
	case "throttled":
		return fmt.Sprintf("key %s throttled until %s", k.Key, ClockTime(FromUnixNanos(k.Throttle.Next())))
	}
	return ""
}

// ClockTime renders t's time of day in UTC, with milliseconds only if it
// has some ("12:00:03", "12:00:03.250"): the time of a wait reason.
func ClockTime(t time.Time) string {
	t = t.UTC()
	if t.Nanosecond()/int(time.Millisecond) == 0 {
		return t.Format(time.TimeOnly)
	}
	return t.Format("15:04:05.000")
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
// refuses skipped, each key's jobs up to its free slots and the starts its
// throttle allows, one job of each key a round, at most N in all. A key's
// backlog costs one read of its first jobs, however long it is.
//
// Under a KeyRate with Drop (the Rate of a State's Throttle), a key that
// only its throttle blocks is not skipped, and a key is not capped by its
// throttle: its share is its free slots, as if it had no throttle, and of
// the jobs the walk picks of it those past the starts its throttle allows
// are to be dropped (KeyPick.Drops). Starts and drops together are at
// most N.
//
// Under the queue's own Rate with Drop (Split), N is the claim's room as
// if that rate did not bind, and the jobs the walk would start are split
// into starts and drops by the rate (RateSplit).
type KeyWalk struct {
	Cursor string
	Limit  int // the queue's limit per key (0: none)
	Now    time.Time
	N      int
	// Next returns the first key (not "") with available jobs after
	// after, and not after upTo unless upTo is "".
	Next func(after, upTo string) (key string, ok bool, err error)
	// State returns a key's state (the zero state, named, without a row),
	// its Throttle set when the queue has a KeyRate.
	State func(key string) (KeyState, error)
	// Jobs returns the first n available jobs of key, in claim order.
	Jobs func(key string, n int) ([]job.ID, error)
	// Split, for a queue whose own Rate has Drop, starts the first of the
	// jobs the walk would start that the rate allows and drops the rest
	// (RateSplit). Nil: each is started (a rate without Drop caps N).
	Split *RateSplit
}

// RateSplit is the rule of a keyed claim of a queue whose own Rate has
// Drop (decision 104). The claim's room for the queue is what it could
// start if that rate did not bind: the least of its Limit, its
// QueueLimits for the queue and the queue's free slots. It walks the keys
// in turn over that room as ever (KeyWalk, the memory store's key pick);
// of the jobs the walk comes to that their keys would start, in the
// walk's turn order, the first Allowed start and the rest are dropped
// with DropReason. A job the walk drops for its key's rate (a KeyRate with
// Drop: KeyDropReason) keeps that reason and takes none of Allowed. So
// starts and drops are at most the room, drops take no token of either
// rate and no slot, and the keys the walk skips — paused, held, at their
// limit, throttled by a KeyRate without Drop — drop nothing.
type RateSplit struct {
	// Allowed is how many starts the queue's rate allows the claim
	// (Throttle.Free of its room at its now).
	Allowed int
	started int
}

// Start reports whether the walk's next job that its key would start
// starts (true: one of Allowed) or is dropped for the queue's rate.
func (s *RateSplit) Start() bool {
	if s.started >= s.Allowed {
		return false
	}
	s.started++
	return true
}

// KeyPick is what KeyWalk.Pick picked.
type KeyPick struct {
	// IDs are the jobs to claim, in turn order; Keys their keys.
	IDs  []job.ID
	Keys []string
	// Drops are the jobs to drop, in turn order, under a KeyRate with
	// Drop or a Split; DropKeys their keys; OverRate[i] reports whether
	// Drops[i] is dropped for the queue's own rate rather than its key's
	// (DropReason gives each its reason).
	Drops    []job.ID
	DropKeys []string
	OverRate []bool
	// Last is the key of the last job picked, claimed or dropped: the
	// queue's next cursor ("" if none was picked).
	Last string
	// Held reports whether a key at its limit (with jobs left) held jobs
	// back.
	Held bool
	// ThrottledUntil is, if a key's throttle held jobs back, the earliest
	// time such a key's throttle allows a start, after the picked jobs
	// started (zero if none did): ClaimResult.ThrottledUntil.
	ThrottledUntil time.Time
}

// Pick returns the jobs to claim (KeyPick).
func (w KeyWalk) Pick() (KeyPick, error) {
	type keyJobs struct {
		key       string
		ids       []job.ID
		starts    int // ids[:starts] start, the rest are dropped
		th        Throttle
		throttled bool // its throttle capped it, and it may have more
	}
	var pick KeyPick
	var walk []keyJobs
	now := UnixNanos(w.Now)
	until := func(next int64) {
		if u := FromUnixNanos(next); next > now && (pick.ThrottledUntil.IsZero() || u.Before(pick.ThrottledUntil)) {
			pick.ThrottledUntil = u
		}
	}
	visit := func(key string) error {
		k, err := w.State(key)
		if err != nil {
			return err
		}
		switch KeyBlocked(k, w.Limit, w.Now) {
		case "":
		case "limit":
			pick.Held = true
			return nil
		case "throttled":
			if !k.Throttle.Rate.Drop {
				until(k.Throttle.Next())
				return nil
			}
		default:
			return nil
		}
		take := w.N
		capped := w.Limit > 0 && key != "" && w.Limit-k.Running < take
		if capped {
			take = w.Limit - k.Running
		}
		free, read := take, take
		if key != "" {
			free = k.Throttle.Free(now, take)
			if !k.Throttle.Rate.Drop {
				read = free
			}
		}
		got, err := w.Jobs(key, read)
		if err != nil {
			return err
		}
		if len(got) > 0 {
			walk = append(walk, keyJobs{key, got, min(free, len(got)), k.Throttle, read == free && free < take && len(got) == free})
		}
		pick.Held = pick.Held || capped && free == take && len(got) == take // the key may have more, at its limit now
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
		return pick, err
	}
	if len(walk) < w.N {
		if err := visit(""); err != nil {
			return pick, err
		}
	}
	if w.Cursor != "" && len(walk) < w.N {
		if err := scan("", w.Cursor); err != nil {
			return pick, err
		}
	}
	for round := 0; len(pick.IDs)+len(pick.Drops) < w.N; round++ {
		took := false
		for _, kj := range walk {
			if round < len(kj.ids) && len(pick.IDs)+len(pick.Drops) < w.N {
				starts := round < kj.starts // its key would start it
				if starts && (w.Split == nil || w.Split.Start()) {
					pick.IDs, pick.Keys = append(pick.IDs, kj.ids[round]), append(pick.Keys, kj.key)
				} else {
					pick.Drops, pick.DropKeys = append(pick.Drops, kj.ids[round]), append(pick.DropKeys, kj.key)
					pick.OverRate = append(pick.OverRate, starts)
				}
				pick.Last, took = kj.key, true
			}
		}
		if !took {
			break
		}
	}
	for _, kj := range walk {
		if kj.throttled && slices.Contains(pick.IDs, kj.ids[len(kj.ids)-1]) { // every start it allowed was taken
			until(kj.th.Take(now, len(kj.ids)).Next())
		}
	}
	return pick, nil
}

// DropReason returns the LastError of p.Drops[i], a job of queue, whose
// own rate is rate and rate per key keyRate: DropReason if it is dropped
// for the queue's rate (OverRate), KeyDropReason otherwise.
func (p KeyPick) DropReason(i int, queue string, rate, keyRate Rate) string {
	if p.OverRate[i] {
		return DropReason(queue, rate)
	}
	return KeyDropReason(queue, p.DropKeys[i], keyRate)
}

// KeyStarts counts the jobs of each key (not "") among jobs, in key order:
// what a claim adds to its keys' slots, and moves their throttles by.
func KeyStarts(jobs []*job.Job) (keys []string, n []int) {
	count := map[string]int{}
	for _, j := range jobs {
		if j.Key != "" {
			count[j.Key]++
		}
	}
	keys = slices.Sorted(maps.Keys(count))
	n = make([]int, len(keys))
	for i, k := range keys {
		n[i] = count[k]
	}
	return keys, n
}

// ScanKeyThrottles reads the rows of a SQL store's query of keys'
// throttles joined to their queue — queue, key, tat, key_rate_n,
// key_rate_period (nanoseconds), key_rate_burst, key_rate_drop — as
// KeyStates with only Queue, Key and Throttle set (*sql.Rows and pgx.Rows
// both serve).
func ScanKeyThrottles(rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}) ([]KeyState, error) {
	var out []KeyState
	for rows.Next() {
		var k KeyState
		var period int64
		if err := rows.Scan(&k.Queue, &k.Key, &k.Throttle.TAT, &k.Throttle.Rate.N, &period, &k.Throttle.Rate.Burst,
			&k.Throttle.Rate.Drop); err != nil {
			return nil, err
		}
		k.Throttle.Rate.Period = time.Duration(period)
		out = append(out, k)
	}
	return out, rows.Err()
}

// MergeKeyThrottles returns the key states rows (sorted by queue and key)
// with the throttle states throttles (sorted the same way, each with only
// Queue, Key and Throttle set) merged in: ListKeys' answer of a store that
// keeps the two apart.
func MergeKeyThrottles(rows, throttles []KeyState) []KeyState {
	out := make([]KeyState, 0, len(rows)+len(throttles))
	i, j := 0, 0
	for i < len(rows) || j < len(throttles) {
		c := 0
		switch {
		case i == len(rows):
			c = 1
		case j == len(throttles):
			c = -1
		default:
			if c = strings.Compare(rows[i].Queue, throttles[j].Queue); c == 0 {
				c = strings.Compare(rows[i].Key, throttles[j].Key)
			}
		}
		switch {
		case c < 0:
			out = append(out, rows[i])
			i++
		case c > 0:
			out = append(out, throttles[j])
			j++
		default:
			k := rows[i]
			k.Throttle = throttles[j].Throttle
			out = append(out, k)
			i, j = i+1, j+1
		}
	}
	return out
}
