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
	// WaitReason says why its ready jobs wait, if they do ("queue mail
	// paused", "queue mail at its limit of 5").
	WaitReason string `json:"wait_reason,omitempty"`
	// Counts are the queue's jobs by state name, every state present.
	Counts map[string]int `json:"counts"`
	// Held counts the jobs ready to run that the queue's state holds back
	// (its available jobs while it is paused or at its limit).
	Held int `json:"held"`
	// Waiting is scheduled + available + retrying; Running the jobs
	// running in every process.
	Waiting int `json:"waiting"`
	Running int `json:"running"`
}

// QueueOf returns q's view.
func QueueOf(q hopper.QueueInfo) Queue {
	v := Queue{Name: q.Name, Paused: q.Paused, Held: q.Held, Concurrency: q.Concurrency, Slots: q.Slots,
		WaitReason: q.WaitReason(), Counts: make(map[string]int, len(job.States))}
	if !q.PausedAt.IsZero() {
		t := q.PausedAt.UTC()
		v.PausedAt = &t
	}
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
