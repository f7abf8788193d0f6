package statsview

import (
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/job"
)

// Queue is the public JSON of a hopper.QueueInfo, shared by the CLI's
// queue list --json and the HTTP API's /queues.
type Queue struct {
	Name     string     `json:"name"`
	Paused   bool       `json:"paused"`
	PausedAt *time.Time `json:"paused_at,omitempty"`
	// Concurrency is the queue's limit across every process (0: none);
	// Slots the running jobs that count against it.
	Concurrency int `json:"concurrency"`
	Slots       int `json:"slots"`
	// KeyConcurrency is the queue's limit per key (0: none).
	KeyConcurrency int `json:"key_concurrency"`
	// Rate is the queue's throttle as N/PERIOD ("100/1s"; absent: none),
	// Burst how many may start at once, Drop whether the excess is
	// dropped rather than held; ThrottledUntil, while the throttle allows
	// no start, when it next allows one.
	Rate           string     `json:"rate,omitempty"`
	Burst          int        `json:"burst,omitempty"`
	Drop           bool       `json:"drop,omitempty"`
	ThrottledUntil *time.Time `json:"throttled_until,omitempty"`
	// KeyRate is the queue's throttle per key as N/PERIOD (absent: none),
	// KeyBurst how many of one key may start at once, KeyDrop whether a
	// key's excess is dropped rather than held.
	KeyRate  string `json:"key_rate,omitempty"`
	KeyBurst int    `json:"key_burst,omitempty"`
	KeyDrop  bool   `json:"key_drop,omitempty"`
	// WaitReason says why its ready jobs wait, if they do ("queue mail
	// paused", "queue mail at its limit of 5", "queue mail throttled
	// until 12:00:03").
	WaitReason string `json:"wait_reason,omitempty"`
	// Counts are the queue's jobs by state name, every state present.
	Counts map[string]int `json:"counts"`
	// Held counts the jobs ready to run that the queue's state holds back
	// (its available jobs while it is paused, at its limit or
	// throttled); Throttled those its throttle holds back.
	Held      int `json:"held"`
	Throttled int `json:"throttled"`
	// KeyHeld counts the jobs ready to run that their keys hold back (a
	// key paused, held, at its limit or throttled) while the queue itself
	// does not.
	KeyHeld int `json:"key_held"`
	// Waiting is scheduled + available + retrying; Running the jobs
	// running in every process.
	Waiting int `json:"waiting"`
	Running int `json:"running"`
}

// QueueOf returns q's view.
func QueueOf(q hopper.QueueInfo) Queue {
	v := Queue{Name: q.Name, Paused: q.Paused, Held: q.Held, Concurrency: q.Concurrency, Slots: q.Slots, KeyConcurrency: q.KeyConcurrency,
		WaitReason: q.WaitReason(), Counts: make(map[string]int, len(job.States))}
	if !q.PausedAt.IsZero() {
		t := q.PausedAt.UTC()
		v.PausedAt = &t
	}
	if q.Rate.N > 0 {
		v.Rate, v.Burst, v.Drop = q.Rate.String(), q.Rate.Burst, q.Rate.Drop
	}
	if !q.ThrottledUntil.IsZero() {
		t := q.ThrottledUntil.UTC()
		v.ThrottledUntil = &t
	}
	if q.KeyRate.N > 0 {
		v.KeyRate, v.KeyBurst, v.KeyDrop = q.KeyRate.String(), q.KeyRate.Burst, q.KeyRate.Drop
	}
	v.Throttled, v.KeyHeld = q.Throttled, q.KeyHeld
	for _, s := range job.States {
		n := q.Counts[s]
		v.Counts[s.String()] = n
		switch {
		case s.Waiting():
			v.Waiting += n
		case s == hopper.StateRunning:
			v.Running += n
		}
	}
	return v
}

// QueuesOf returns the views of qs, in order; never nil.
func QueuesOf(qs []hopper.QueueInfo) []Queue {
	out := make([]Queue, len(qs))
	for i, q := range qs {
		out[i] = QueueOf(q)
	}
	return out
}

// Key is the JSON view of one key of a queue (hopper.KeyInfo): the reply
// of a key's pause or resume.
type Key struct {
	Queue     string     `json:"queue"`
	Key       string     `json:"key"`
	Running   int        `json:"running"`
	Paused    bool       `json:"paused"`
	PausedAt  *time.Time `json:"paused_at,omitempty"`
	HeldUntil *time.Time `json:"held_until,omitempty"`
	// ThrottledUntil is, while the key's throttle allows no start, when
	// it next allows one.
	ThrottledUntil *time.Time `json:"throttled_until,omitempty"`
}

// KeyOf returns k's view.
func KeyOf(k hopper.KeyInfo) Key {
	v := Key{Queue: k.Queue, Key: k.Key, Running: k.Running, Paused: k.Paused}
	if !k.PausedAt.IsZero() {
		t := k.PausedAt.UTC()
		v.PausedAt = &t
	}
	if !k.HeldUntil.IsZero() {
		t := k.HeldUntil.UTC()
		v.HeldUntil = &t
	}
	if !k.ThrottledUntil.IsZero() {
		t := k.ThrottledUntil.UTC()
		v.ThrottledUntil = &t
	}
	return v
}
