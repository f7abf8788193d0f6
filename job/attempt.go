package job

import (
	"encoding/json"
	"time"
)

// Attempt records one attempt of a job.
type Attempt struct {
	Attempt   int       `json:"attempt"` // 1-based
	StartedAt time.Time `json:"started_at"`
	// Duration runs from StartedAt to the attempt's end; for an
	// interrupted attempt, to its worker's last heart-beat (the last
	// renewal of its lease, the last time it was known to run: 0 if it
	// never renewed it), not to the rescue.
	Duration time.Duration `json:"duration"`
	Worker   string        `json:"worker,omitempty"`
	// Outcome is the state the attempt led to, or "interrupted" when the
	// worker died, "released" when shutdown gave the job back, or
	// "snoozed" when the handler snoozed it (its Error says for how long).
	Outcome string `json:"outcome"`
	Error   string `json:"error,omitempty"`
	// Result is what the handler returned with its error, if anything: a
	// failed exec job's exit code and output, say. The result of a
	// successful attempt is the job's Result.
	Result json.RawMessage `json:"result,omitempty"`
	// Backoff is the delay chosen before the next attempt, if any.
	Backoff time.Duration `json:"backoff,omitempty"`
}

// Outcome names for attempts that did not end in a state change of their own.
const (
	OutcomeInterrupted = "interrupted" // worker lost (store.ErrorWorkerLost)
	OutcomeReleased    = "released"    // shutdown gave the job back; the attempt does not count
	OutcomeSnoozed     = "snoozed"     // the handler snoozed the job (Snooze); the attempt does not count
)
