// Package statsview is the public JSON that the CLI's --json and the HTTP
// API share: hopper.Stats's counts (stats --json, /stats: states by name,
// and the sums every reader wants), the queues' and keys' flow control
// (queue list --json, /queues), and a job with why it waits (jobs get
// --json, /jobs/{id}).
package statsview

import (
	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/job"
)

// Counts are a Stats's job counts by queue and state name. Embedded in a
// JSON view, its fields become the view's.
type Counts struct {
	Queues map[string]map[string]int `json:"queues"` // queue → state → jobs
	Totals map[string]int            `json:"totals"` // state → jobs, every state present
	// Waiting is scheduled + available + retrying.
	Waiting int `json:"waiting"`
	Running int `json:"running"`
	Total   int `json:"total"`
}

// Of returns st's counts.
func Of(st hopper.Stats) Counts {
	out := Counts{Queues: make(map[string]map[string]int, len(st.Queues)), Totals: make(map[string]int, len(job.States))}
	for _, s := range job.States {
		out.Totals[s.String()] = 0
	}
	for q, byState := range st.Queues {
		m := make(map[string]int, len(job.States))
		for _, s := range job.States {
			n := byState[s]
			m[s.String()] = n
			out.Totals[s.String()] += n
			out.Total += n
			switch {
			case s.Waiting():
				out.Waiting += n
			case s == hopper.StateRunning:
				out.Running += n
			}
		}
		out.Queues[q] = m
	}
	return out
}

// Finished returns st's jobs finished in its window by final state name:
// completed, cancelled and dead, each present.
func Finished(st hopper.Stats) map[string]int {
	out := make(map[string]int, 3)
	for _, s := range []hopper.State{hopper.StateCompleted, hopper.StateCancelled, hopper.StateDead} {
		out[s.String()] = st.Finished[s]
	}
	return out
}
