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
	// Counts are the queue's jobs by state name, every state present.
	Counts map[string]int `json:"counts"`
	// Held counts the jobs ready to run that the queue's state holds back
	// (its available jobs while it is paused).
	Held int `json:"held"`
	// Waiting is scheduled + available + retrying; Running the jobs
	// running in every process.
	Waiting int `json:"waiting"`
	Running int `json:"running"`
}

// QueueOf returns q's view.
func QueueOf(q hopper.QueueInfo) Queue {
	v := Queue{Name: q.Name, Paused: q.Paused, Held: q.Held, Counts: make(map[string]int, len(job.States))}
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
